package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/qualify/qualifytest"
	"github.com/tickstack/tickstack/internal/testutil"
)

// The test binary doubles as the CLI and as the reflector (a tickstack-bench --role=server), so
// each can run in its own network namespace: with qualifyRole=cli it runs the command line in
// os.Args, with qualifyRole=reflector it serves the control protocol on the address it is given.
const qualifyRole = "TICKSTACK_TEST_QUALIFY_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(qualifyRole) {
	case "cli":
		root := newRoot("tickstack")
		root.SetArgs(os.Args[1:])
		if err := root.ExecuteContext(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "tickstack:", err)
			os.Exit(exitCode(err))
		}
		os.Exit(0)
	case "reflector":
		addr, launcher := os.Args[1], os.Args[2]
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, fmt.Sprint(judge.DefaultControlPort)))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r := &bench.Reflector{Tools: bench.Tools{Launcher: launcher}, DataAddress: addr, Once: true}
		if err := r.Serve(context.Background(), ln); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestQualifyOnVeth runs `tickstack qualify` on one end of a veth pair against a reflector on the
// other, with the real data plane build and sockperf, and checks the report: driver veth, one
// queue, native XDP attached, zero-copy refused by the driver and so the verdict Degraded with
// that reason, the conformance cases passed, both stacks' ping-pong medians measured; and the
// exit status says Degraded.
func TestQualifyOnVeth(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "sockperf")
	launcher := qualifytest.RequireConform(t)
	link := testutil.VethNamespaces(t, fmt.Sprintf("qualifyc%d", os.Getpid()%10000), "198.18.92")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	refl := exec.CommandContext(ctx, link.IP, "netns", "exec", link.NSB, self, link.AddrB, launcher)
	refl.Env = append(os.Environ(), qualifyRole+"=reflector")
	refl.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	refl.Cancel = func() error { return syscall.Kill(-refl.Process.Pid, syscall.SIGKILL) }
	refl.WaitDelay = 10 * time.Second
	var reflOut strings.Builder
	refl.Stdout, refl.Stderr = &reflOut, &reflOut
	if err := refl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = refl.Wait() })

	work := t.TempDir()
	cli := exec.CommandContext(ctx, link.IP, "netns", "exec", link.NSA, self, "qualify", "--interface", link.IfA, "--peer", link.AddrB,
		"--peer-timeout", "30s", "--launcher", launcher, "--duration", "1s", "--work-dir", work, "-o", "json")
	cli.Env = append(os.Environ(), qualifyRole+"=cli")
	var stderr strings.Builder
	cli.Stderr = &stderr
	out, err := cli.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("qualify: %v\n%s", err, stderr.String())
	}
	var r tsv1.QualifyReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("qualify -o json printed %q (%v); stderr:\n%s\nreflector:\n%s", out, err, stderr.String(), reflOut.String())
	}
	t.Logf("report: %s", out)
	if code != 3 {
		t.Errorf("exit status %d, want 3 (Degraded); stderr:\n%s", code, stderr.String())
	}
	if r.Interface != link.IfA || r.Driver != "veth" || r.Peer != link.AddrB || r.Error != "" {
		t.Errorf("interface %q driver %q peer %q error %q, want %s, veth, %s, none", r.Interface, r.Driver, r.Peer, r.Error, link.IfA, link.AddrB)
	}
	if r.Queues.ReceiveQueues != 1 || r.Queues.ChannelsError != "" || r.Queues.RX != 1 || r.Queues.TX != 1 {
		t.Errorf("queues %+v, want one rx and one tx channel and one receive queue", r.Queues)
	}
	if r.Steering.NTuple != "unsupported" || r.Steering.RSSRings != 0 || r.Timestamping.HardwareRX || r.Timestamping.PHCIndex != -1 || len(r.IRQs) != 0 {
		t.Errorf("steering %+v, timestamping %+v, irqs %+v: veth has no ntuple, RSS, hardware clock or interrupts", r.Steering, r.Timestamping, r.IRQs)
	}
	if !r.XDP.Native.Works || r.XDP.Native.Detail != "XDP native, bound copy" || r.XDP.Generic != nil {
		t.Errorf("native XDP %+v (generic %+v), want it attached and bound copy", r.XDP.Native, r.XDP.Generic)
	}
	if r.XDP.ZeroCopy.Works || !strings.Contains(r.XDP.ZeroCopy.Detail, "cannot bind an AF_XDP socket in zero-copy mode") {
		t.Errorf("zero-copy %+v, want refused by the driver", r.XDP.ZeroCopy)
	}
	qualifytest.CheckMeasured(t, &r)
	for _, p := range r.PingPong {
		if p.P99Ns < p.MedianNs || p.MessageSize != 64 {
			t.Errorf("ping-pong %+v, want a median and p99 at 64 B", p)
		}
	}
	if r.Verdict != tsv1.QualifyDegraded {
		t.Errorf("verdict %s, want Degraded", r.Verdict)
	}
	found := false
	for _, re := range r.Reasons {
		found = found || re.Check == "zeroCopy" && re.Verdict == tsv1.QualifyDegraded
		if re.Verdict == tsv1.QualifyUnsupported {
			t.Errorf("unsupported reason on veth: %+v", re)
		}
	}
	if !found {
		t.Errorf("reasons %+v lack zeroCopy", r.Reasons)
	}
}

// TestQualifyBadInputsAreNamed: each bad flag is refused before anything runs, naming the flag.
func TestQualifyBadInputsAreNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"qualify"}, "--interface is required"},
		{[]string{"qualify", "-i", "nosuchif0"}, "--interface nosuchif0: no such interface"},
		{[]string{"qualify", "-i", "this-is-far-too-long"}, "longer than 15 characters"},
		{[]string{"qualify", "-i", "lo", "--size", "9000"}, "--size 9000 out of range"},
		{[]string{"qualify", "-i", "lo", "--duration", "5m"}, "--duration 5m0s out of range"},
		{[]string{"qualify", "-i", "lo", "-o", "yaml"}, `-o "yaml": use json or text`},
	} {
		root := newRoot("tickstack")
		root.SetArgs(tc.args)
		var out strings.Builder
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != 1 {
			t.Errorf("%v: error %v (exit %d), want one naming %q, exit 1", tc.args, err, exitCode(err), tc.want)
		}
		if out.Len() != 0 && strings.Contains(out.String(), "verdict") {
			t.Errorf("%v: a report was printed: %s", tc.args, out.String())
		}
	}
}

// TestQualifyPeerInterfaceOnVeth qualifies one end of a veth pair whose other end is in the same
// namespace, as two VFs of one port are: --peer-interface moves the other end into a namespace of
// its own with a reflector there, and moves it back afterwards.
func TestQualifyPeerInterfaceOnVeth(t *testing.T) {
	testutil.RequireRoot(t)
	ipTool := testutil.RequireTool(t, "ip")
	testutil.RequireTool(t, "sockperf")
	launcher := qualifytest.RequireConform(t)
	id := os.Getpid() % 10000
	ns, ifa, ifb := fmt.Sprintf("qualifyd%d", id), fmt.Sprintf("qualda%d", id), fmt.Sprintf("qualdb%d", id)
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ipTool, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	sh("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command(ipTool, "netns", "del", ns).Run() })
	sh("-n", ns, "link", "add", ifa, "type", "veth", "peer", "name", ifb)
	sh("-n", ns, "addr", "add", "198.18.93.1/24", "dev", ifa)
	sh("-n", ns, "link", "set", ifa, "up")
	sh("-n", ns, "link", "set", "lo", "up")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli := exec.CommandContext(ctx, ipTool, "netns", "exec", ns, self, "qualify", "-i", ifa, "--peer-interface", ifb, "--peer-address", "198.18.93.2/24",
		"--launcher", launcher, "--duration", "1s", "-o", "json")
	cli.Env = append(os.Environ(), qualifyRole+"=cli")
	var stderr strings.Builder
	cli.Stderr = &stderr
	out, err := cli.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("exit %v, want status 3 (Degraded); stderr:\n%s", err, stderr.String())
	}
	var r tsv1.QualifyReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("qualify -o json printed %q (%v); stderr:\n%s", out, err, stderr.String())
	}
	if r.Peer != "198.18.93.2" {
		t.Errorf("peer %q, want the --peer-address", r.Peer)
	}
	qualifytest.CheckMeasured(t, &r)
	// the peer's end is back, and its namespace gone
	if o, err := exec.Command(ipTool, "-n", ns, "link", "show", "dev", ifb).CombinedOutput(); err != nil {
		t.Errorf("%s is not back in %s: %v: %s", ifb, ns, err, o)
	}
	if o, _ := exec.Command(ipTool, "netns", "list").CombinedOutput(); strings.Contains(string(o), "tickstack-qualify-") {
		t.Errorf("the peer's namespace is left: %s", o)
	}
	// bad peer flags are refused before anything moves
	bad := exec.CommandContext(ctx, ipTool, "netns", "exec", ns, self, "qualify", "-i", ifa, "--peer-interface", ifb, "--peer-address", "198.18.93.2",
		"--launcher", launcher)
	bad.Env = cli.Env
	if o, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(o), "--peer-address \"198.18.93.2\": give an IPv4 address with its prefix length") {
		t.Errorf("--peer-address without a prefix: %v: %s", err, o)
	}
	if o, err := exec.Command(ipTool, "-n", ns, "link", "show", "dev", ifb).CombinedOutput(); err != nil {
		t.Errorf("a refused run moved %s: %v: %s", ifb, err, o)
	}
}
