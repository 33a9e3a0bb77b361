package qualify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench"
)

// boundRe is tickstack-stats' XSK line: "queues 0-3, XDP native, bound copy".
var boundRe = regexp.MustCompile(`XDP (\w+), bound (\w+)`)

// tryModes asks the data plane for native XDP, generic XDP when native fails, and zero-copy,
// each with TICKSTACK_XDP_MODE and TICKSTACK_REQUIRE=1 (docs/dataplane.md "Bind mode and busy
// polling"): the stack refuses a mode the interface cannot give, and reports the one it got.
func tryModes(ctx context.Context, o *Options, launcher string, r *tsv1.QualifyReport) {
	r.XDP.Native = trial(ctx, o, launcher, r.Address, "native", 0)
	if !r.XDP.Native.Works {
		g := trial(ctx, o, launcher, r.Address, "skb", 1)
		r.XDP.Generic = &g
		r.XDP.ZeroCopy = tsv1.QualifyTrial{Detail: "not tried: zero-copy needs native XDP"}
		return
	}
	r.XDP.ZeroCopy = trial(ctx, o, launcher, r.Address, "native,zerocopy", 2)
}

// trial runs a sockperf server bound to addr under the launcher with TICKSTACK_XDP_MODE=mode and
// TICKSTACK_REQUIRE=1: it either exits with the stack's refusal, or serves, and tickstack-stats
// says which XDP and bind mode its XSKs got.
func trial(ctx context.Context, o *Options, launcher, addr, mode string, n int) tsv1.QualifyTrial {
	sockperf := o.Tools.Sockperf
	if sockperf == "" {
		sockperf = "sockperf"
	}
	sp, err := exec.LookPath(sockperf)
	if err != nil {
		return tsv1.QualifyTrial{Detail: fmt.Sprintf("not tried: sockperf not found: %v", err)}
	}
	stats := filepath.Join(filepath.Dir(launcher), "tickstack-stats")
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, launcher, "-p", bench.LauncherProfile, "--require", sp, "sr", "-i", addr, "-p", strconv.Itoa(o.port(n)))
	cmd.Env = append(withoutPreload(os.Environ()), "TICKSTACK_XDP_MODE="+mode, "TICKSTACK_IFACES="+o.Interface)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out := &bench.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return tsv1.QualifyTrial{Detail: fmt.Sprintf("not tried: %v", err)}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case werr := <-done:
			_ = werr // stopped on purpose: its exit status says nothing
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			werr := <-done
			_ = werr
		}
	}
	o.logf("trial TICKSTACK_XDP_MODE=%s: %s", mode, cmd.String())
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return tsv1.QualifyTrial{Detail: refusal(mode, out.String(), err)}
		case <-ctx.Done():
			stop()
			return tsv1.QualifyTrial{Detail: fmt.Sprintf("TICKSTACK_XDP_MODE=%s: no answer within 30s: %s", mode, tail(out.String()))}
		case <-tick.C:
		}
		if !bench.ParseSockperfServer(out.String()).Ready {
			continue
		}
		so, _ := exec.CommandContext(ctx, stats, strconv.Itoa(cmd.Process.Pid)).CombinedOutput()
		m := boundRe.FindStringSubmatch(string(so))
		if m == nil {
			continue // the XSK is not published yet
		}
		stop()
		got := fmt.Sprintf("XDP %s, bound %s", m[1], m[2])
		switch mode {
		case "native":
			return tsv1.QualifyTrial{Works: m[1] == "native", Detail: got}
		case "skb":
			return tsv1.QualifyTrial{Works: m[1] == "skb" || m[1] == "generic", Detail: got}
		default:
			return tsv1.QualifyTrial{Works: m[2] == "zerocopy", Detail: got}
		}
	}
}

// refusal is the stack's own words for a trial that exited: its TICKSTACK_XDP_MODE line, else the
// output's end.
func refusal(mode, out string, err error) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "TICKSTACK_XDP_MODE=") || strings.Contains(l, "not accelerated") {
			if i := strings.Index(l, "TICKSTACK_XDP_MODE="); i >= 0 {
				return strings.TrimSpace(l[i:])
			}
			return strings.TrimSpace(l)
		}
	}
	return fmt.Sprintf("TICKSTACK_XDP_MODE=%s: the server exited (%v): %s", mode, err, tail(out))
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 400 {
		s = "..." + s[len(s)-400:]
	}
	return s
}

func withoutPreload(env []string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		if !strings.HasPrefix(e, "LD_PRELOAD=") && !strings.HasPrefix(e, "TICKSTACK_XDP_MODE=") && !strings.HasPrefix(e, "TICKSTACK_REQUIRE=") {
			out = append(out, e)
		}
	}
	return out
}
