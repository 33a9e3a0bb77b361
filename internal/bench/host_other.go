//go:build !linux

package bench

import "syscall"

// childAttr: its own process group; no parent-death signal outside Linux.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// The runner measures Linux nodes only; these let the package, which the CLI imports for its
// tables, build for other systems (the CLI's darwin build: make release).

// sockCloexec: no SOCK_CLOEXEC flag outside Linux's socket types.
const sockCloexec = 0

// affinityOf: no CPU affinity outside Linux.
func affinityOf(int) []int { return nil }
