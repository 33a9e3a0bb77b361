// Package bootloader computes the kernel arguments a tuned node needs, compares them with the
// arguments the running kernel booted with (/proc/cmdline), and writes them for the next boot
// through a pluggable Writer: a GRUB drop-in (GRUB) or systemd-boot / Boot Loader Specification
// entries (BLS). Removing them restores the boot configuration exactly as it was.
package bootloader

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// Params is what the kernel arguments are built from; zero values add nothing.
type Params struct {
	// IsolatedCPUs become isolcpus=<flags>,<list>.
	IsolatedCPUs cpuset.Set
	// IsolationFlags are isolcpus flags; nil means managed_irq,domain (keep managed IRQs and
	// the scheduler's load balancing off the isolated CPUs).
	IsolationFlags []string
	// NohzFullCPUs become nohz_full=<list> (no scheduler tick while one task runs).
	NohzFullCPUs cpuset.Set
	// RCUNoCBCPUs become rcu_nocbs=<list> (RCU callbacks offloaded to housekeeping kthreads).
	RCUNoCBCPUs cpuset.Set
	// IRQAffinityCPUs become irqaffinity=<list> (the default affinity of IRQs at boot).
	IRQAffinityCPUs cpuset.Set
	// IdlePoll adds idle=poll: idle CPUs spin instead of entering any C-state.
	IdlePoll bool
	// NoSMT adds nosmt: sibling threads stay offline from boot on.
	NoSMT bool
	// MaxCState, when set, adds processor.max_cstate=N and intel_idle.max_cstate=N.
	MaxCState *int
	// DefaultHugepageSizeKB, when set, adds default_hugepagesz.
	DefaultHugepageSizeKB int
	// Hugepages are boot-time hugepage pools (hugepagesz=S hugepages=N pairs).
	Hugepages []HugepagePool
}

// HugepagePool is a boot-time hugepage pool.
type HugepagePool struct {
	SizeKB int
	Count  int
}

func formatSize(kb int) string {
	switch {
	case kb%(1024*1024) == 0:
		return strconv.Itoa(kb/(1024*1024)) + "G"
	case kb%1024 == 0:
		return strconv.Itoa(kb/1024) + "M"
	}
	return strconv.Itoa(kb) + "K"
}

func parseSize(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := 1
	switch s[len(s)-1] {
	case 'K', 'k':
		s = s[:len(s)-1]
	case 'M', 'm':
		mult, s = 1024, s[:len(s)-1]
	case 'G', 'g':
		mult, s = 1024*1024, s[:len(s)-1]
	default:
		n, err := strconv.Atoi(s)
		if err != nil || n%1024 != 0 {
			return 0, fmt.Errorf("size %q", s)
		}
		return n / 1024, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("size %q", s)
	}
	return n * mult, nil
}

var isolationFlags = []string{"domain", "managed_irq", "nohz"}

// Build returns the kernel arguments for p in a stable order, or every problem in p (field,
// problem, fix) before anything is written.
func Build(p Params) ([]string, error) {
	var errs []error
	var args []string
	if !p.IsolatedCPUs.IsEmpty() {
		flags := p.IsolationFlags
		if flags == nil {
			flags = []string{"managed_irq", "domain"}
		}
		for _, f := range flags {
			if !slices.Contains(isolationFlags, f) {
				errs = append(errs, fmt.Errorf("isolationFlags: %q is not an isolcpus flag; use %s", f, strings.Join(isolationFlags, ", ")))
			}
		}
		v := p.IsolatedCPUs.String()
		if len(flags) > 0 {
			v = strings.Join(flags, ",") + "," + v
		}
		args = append(args, "isolcpus="+v)
	}
	if !p.NohzFullCPUs.IsEmpty() {
		args = append(args, "nohz_full="+p.NohzFullCPUs.String())
	}
	if !p.RCUNoCBCPUs.IsEmpty() {
		args = append(args, "rcu_nocbs="+p.RCUNoCBCPUs.String())
	}
	if !p.IRQAffinityCPUs.IsEmpty() {
		if !p.IsolatedCPUs.IsEmpty() && !p.IRQAffinityCPUs.Intersection(p.IsolatedCPUs).IsEmpty() {
			errs = append(errs, fmt.Errorf("irqAffinityCPUs: %s overlaps the isolated CPUs %s; name housekeeping CPUs only",
				p.IRQAffinityCPUs.Intersection(p.IsolatedCPUs), p.IsolatedCPUs))
		}
		args = append(args, "irqaffinity="+p.IRQAffinityCPUs.String())
	}
	if p.IdlePoll {
		args = append(args, "idle=poll")
	}
	if p.NoSMT {
		args = append(args, "nosmt")
	}
	if p.MaxCState != nil {
		if *p.MaxCState < 0 || *p.MaxCState > 9 {
			errs = append(errs, fmt.Errorf("maxCState: %d is outside 0-9; use 0 or 1 for low latency", *p.MaxCState))
		}
		args = append(args, "processor.max_cstate="+strconv.Itoa(*p.MaxCState), "intel_idle.max_cstate="+strconv.Itoa(*p.MaxCState))
	}
	validSize := func(kb int) bool { return kb == 2048 || kb == 1048576 || kb == 64 || kb == 32768 || kb == 524288 }
	if p.DefaultHugepageSizeKB != 0 {
		if !validSize(p.DefaultHugepageSizeKB) {
			errs = append(errs, fmt.Errorf("defaultHugepageSizeKB: %d kB is not a hugepage size; use 2048 (2M) or 1048576 (1G)", p.DefaultHugepageSizeKB))
		}
		args = append(args, "default_hugepagesz="+formatSize(p.DefaultHugepageSizeKB))
	}
	seen := map[int]bool{}
	for i, hp := range p.Hugepages {
		if !validSize(hp.SizeKB) {
			errs = append(errs, fmt.Errorf("hugepages[%d].sizeKB: %d kB is not a hugepage size; use 2048 (2M) or 1048576 (1G)", i, hp.SizeKB))
		}
		if hp.Count < 0 {
			errs = append(errs, fmt.Errorf("hugepages[%d].count: %d is negative; use 0 or more", i, hp.Count))
		}
		if seen[hp.SizeKB] {
			errs = append(errs, fmt.Errorf("hugepages[%d]: size %d kB appears twice; keep one pool per size", i, hp.SizeKB))
		}
		seen[hp.SizeKB] = true
		args = append(args, "hugepagesz="+formatSize(hp.SizeKB), "hugepages="+strconv.Itoa(hp.Count))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return args, nil
}

// Tokenize splits a kernel command line into arguments the way the kernel does: blanks separate,
// double quotes group (and are removed), and everything after a lone "--" belongs to init and is
// dropped.
func Tokenize(cmdline string) []string {
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	flush := func() {
		if have {
			out = append(out, cur.String())
		}
		cur.Reset()
		have = false
	}
	for _, r := range cmdline {
		switch {
		case r == '"':
			inQuote, have = !inQuote, true
		case !inQuote && (r == ' ' || r == '\t' || r == '\n'):
			flush()
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	flush()
	if i := slices.Index(out, "--"); i >= 0 {
		out = out[:i]
	}
	return out
}

type effective struct {
	values map[string]string // last value of each key ("" for flags)
	pools  map[int]int       // hugepage size (0: default size) -> count
}

func effectiveOf(tokens []string) effective {
	e := effective{values: map[string]string{}, pools: map[int]int{}}
	size := 0
	for _, t := range tokens {
		k, v, _ := strings.Cut(t, "=")
		switch k {
		case "hugepagesz":
			if kb, err := parseSize(v); err == nil {
				size = kb
			}
		case "hugepages":
			if n, err := strconv.Atoi(v); err == nil {
				e.pools[size] = n
			}
		default:
			e.values[k] = v
		}
	}
	return e
}

// Diff is how the running kernel's arguments differ from the desired ones.
type Diff struct {
	// Missing are desired arguments not in effect (absent, or the key has another value).
	Missing []string
	// Observed maps each missing argument's key to the value in effect ("" when absent).
	Observed map[string]string
}

// InEffect reports whether every desired argument is in effect.
func (d Diff) InEffect() bool { return len(d.Missing) == 0 }

// Compare checks desired arguments against a kernel command line (the content of /proc/cmdline).
// For ordinary keys the last occurrence wins, as in the kernel; hugepage pools are compared as
// hugepagesz/hugepages pairs. Arguments on the command line that are not desired are ignored.
func Compare(desired []string, cmdline string) Diff {
	have := effectiveOf(Tokenize(cmdline))
	want := effectiveOf(desired)
	d := Diff{Observed: map[string]string{}}
	for _, t := range desired {
		k, v, _ := strings.Cut(t, "=")
		if k == "hugepagesz" || k == "hugepages" {
			continue
		}
		if got, ok := have.values[k]; !ok || got != v {
			d.Missing = append(d.Missing, t)
			d.Observed[k] = got
		}
	}
	sizes := make([]int, 0, len(want.pools))
	for s := range want.pools {
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	for _, s := range sizes {
		if got, ok := have.pools[s]; !ok || got != want.pools[s] {
			arg := "hugepages=" + strconv.Itoa(want.pools[s])
			key := "hugepages"
			if s != 0 {
				arg = "hugepagesz=" + formatSize(s) + " " + arg
				key = "hugepages[" + formatSize(s) + "]"
			}
			d.Missing = append(d.Missing, arg)
			if ok {
				d.Observed[key] = strconv.Itoa(got)
			} else {
				d.Observed[key] = ""
			}
		}
	}
	return d
}
