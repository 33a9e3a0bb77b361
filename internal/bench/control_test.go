package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"github.com/tickstack/tickstack/internal/testutil"
)

// startReflector serves a Reflector on loopback (a random control port) and connects a client.
func startReflector(t *testing.T, r *Reflector) *ReflectorClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	c, err := DialReflector(ctx, ln.Addr().String(), 10*time.Second)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("reflector did not stop")
		}
	})
	return c
}

// The control protocol refuses what it cannot run, with the reason, and reports an absent bypass
// launcher in its greeting.
func TestReflectorRefusals(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "tickstack-run")
	c := startReflector(t, &Reflector{DataAddress: "127.0.0.1", Tools: Tools{Launcher: missing}})
	if c.Hello.DataAddress != "127.0.0.1" || !strings.Contains(c.Hello.BypassUnavailable, missing) {
		t.Errorf("greeting %+v", c.Hello)
	}
	cases := []struct {
		spec ServerSpec
		want string
	}{
		{ServerSpec{Stack: tsv1.StackKernel, Protocol: tsv1.ProtocolUDP, Port: 80}, "port 80 out of range"},
		{ServerSpec{Stack: "dpdk", Protocol: tsv1.ProtocolUDP, Port: 20000}, `stack "dpdk"`},
		{ServerSpec{Stack: tsv1.StackKernel, Protocol: "sctp", Port: 20000}, `protocol "sctp"`},
		{ServerSpec{Stack: tsv1.StackKernel, Protocol: tsv1.ProtocolUDPMulticast, Port: 20000, Group: "198.18.0.1"}, "not an IPv4 multicast address"},
		{ServerSpec{Stack: tsv1.StackBypass, Protocol: tsv1.ProtocolUDP, Port: 20000}, "stack unavailable: bypass launcher " + missing},
	}
	for _, tc := range cases {
		if _, err := c.Start(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
	if _, err := c.Stop(42); err == nil || !strings.Contains(err.Error(), "no server with id 42") {
		t.Errorf("Stop(42) = %v", err)
	}
	if _, err := c.call(controlRequest{Op: "exec"}, 5*time.Second); err == nil || !strings.Contains(err.Error(), `unknown op "exec"`) {
		t.Errorf("unknown op: %v", err)
	}
}

// A real sockperf server on loopback: started, ready, stopped with its counters; a launcher that
// exits at once is reported with its output.
func TestReflectorRunsSockperf(t *testing.T) {
	testutil.RequireTool(t, "sockperf")
	dir := t.TempDir()
	fake := filepath.Join(dir, "tickstack-run")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'tickstack-run: no XDP here' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := startReflector(t, &Reflector{DataAddress: "127.0.0.1", Tools: Tools{Launcher: fake}})
	port := 20000 + os.Getpid()%20000
	id, err := c.Start(ServerSpec{Stack: tsv1.StackKernel, Protocol: tsv1.ProtocolUDP, Port: port, GapDetection: true})
	if err != nil {
		t.Fatal(err)
	}
	counters, err := c.Stop(id)
	if err != nil {
		t.Fatal(err)
	}
	if counters.Received != 0 || counters.GapDropped != 0 || !strings.Contains(counters.Output, "No messages were received on the server") {
		t.Errorf("idle server counters %+v", counters)
	}
	// The server was sampled from its start to its stop: a window inside that is sampled, one
	// long before it is not; the samples are given once.
	if !c.Hello.Sched || c.Hello.BootID == "" || c.Hello.BootID != bootID("/proc") || counters.SchedMissing != "" {
		t.Errorf("greeting %+v, sched missing %q", c.Hello, counters.SchedMissing)
	}
	now := monoNow()
	deltas, err := c.Sched(id, []StallWindow{{Start: now - int64(60*time.Millisecond), End: now - int64(50*time.Millisecond)}, {Start: now - int64(time.Hour), End: now - int64(time.Hour) + 1}})
	if err != nil || len(deltas) != 2 || !deltas[0].Sampled || deltas[1].Sampled {
		t.Errorf("sched deltas %+v, %v", deltas, err)
	}
	if _, err := c.Sched(id, []StallWindow{{Start: now, End: now}}); err == nil || !strings.Contains(err.Error(), "no samples of a stopped server") {
		t.Errorf("samples given twice: %v", err)
	}
	_, err = c.Start(ServerSpec{Stack: tsv1.StackBypass, Protocol: tsv1.ProtocolUDP, Port: port + 1})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "no XDP here") {
		t.Errorf("failing launcher: %v", err)
	}
}

func TestDialReflectorTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	start := time.Now()
	_, err = DialReflector(context.Background(), addr, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "not reachable within 500ms") {
		t.Errorf("DialReflector = %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("gave up after %s", time.Since(start))
	}
}

func TestRetryOnlyWhenSockperfPrintedNoSummary(t *testing.T) {
	r := &Runner{}
	calls := 0
	_, noSummary := ParseSockperfClient("sockperf: Test ended\n")
	if !errors.Is(noSummary, ErrNoSummary) {
		t.Fatalf("output without summary: %v, want ErrNoSummary", noSummary)
	}
	err := r.retry("x", func() error { calls++; return fmt.Errorf("wrapped: %w", noSummary) })
	if !errors.Is(err, ErrNoSummary) || calls != measureAttempts {
		t.Errorf("%d calls, err %v; want %d attempts", calls, err, measureAttempts)
	}
	calls = 0
	if err := r.retry("x", func() error { calls++; return errors.New("connection refused") }); err == nil || calls != 1 {
		t.Errorf("a real error was retried (%d calls)", calls)
	}
	calls = 0
	if err := r.retry("x", func() error {
		calls++
		if calls == 1 {
			return noSummary
		}
		return nil
	}); err != nil || calls != 2 {
		t.Errorf("second attempt: %v after %d calls", err, calls)
	}
}
