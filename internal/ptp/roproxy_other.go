//go:build !linux

package ptp

import (
	"fmt"
	"net"
	"os"
	"runtime"
)

// The read-only proxy learns a client's pid from SCM_CREDENTIALS and opens its reply socket with
// openat2, both Linux's, where the agent runs; elsewhere the package builds (the CLI reads PTP
// results through it) and the proxy refuses to start.

func credOOBSize() int { return 0 }

func setPassCred(*net.UnixConn) error {
	return fmt.Errorf("the read-only PTP socket needs Linux (SCM_CREDENTIALS), not %s", runtime.GOOS)
}

func senderPID([]byte) (int32, error) {
	return 0, fmt.Errorf("sender credentials need Linux, not %s", runtime.GOOS)
}

func openReplySocket(string, int32, string) (*os.File, error) {
	return nil, fmt.Errorf("opening a client's reply socket needs Linux (openat2), not %s", runtime.GOOS)
}
