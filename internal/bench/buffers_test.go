package bench

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"github.com/tickstack/tickstack/internal/testutil"
)

// statsDumpBuffers is a dump of a library that states its buffering (docs/dataplane.md
// "Statistics"): the buffers line follows the process line.
const statsDumpBuffers = `tickstack stats pid=9001 profile=throughput sockets_accelerated=1 sockets_kernel=0 fallback_events=0 kernel_option=0 kernel_uring=0 kernel_shared=0
buffers sockq_len=4096 umem_frames=2048 frame_size=2048 rx_ring=4096 fill_ring=4096
xsk if=tsdpv7038a ifindex=2 queue=0 mode=native rx_packets=5 tx_packets=5 fill_ring_empty=0
`

func TestParseStackBuffers(t *testing.T) {
	b, err := ParseStackBuffers(strings.NewReader(statsDumpBuffers))
	if err != nil || b != (StackBuffers{SocketQueueDatagrams: 4096, UMEMFrames: 2048, RXRingEntries: 4096}) {
		t.Errorf("ParseStackBuffers = %+v, %v", b, err)
	}
	// the buffers line is not a counter line: the counters do not change
	c, err := ParseStackStats(strings.NewReader(statsDumpBuffers))
	if err != nil || c["xsk.rx_packets"] != 5 || len(c) != 9 {
		t.Errorf("counters of a dump with a buffers line: %v, %v", c, err)
	}
	if _, err := ParseStackBuffers(strings.NewReader(statsDump)); !errors.Is(err, errNoBuffersLine) {
		t.Errorf("an older library's dump: %v, want errNoBuffersLine", err)
	}
	for dump, want := range map[string]string{
		"buffers sockq_len=x umem_frames=1 rx_ring=1\n": "sockq_len=x is not a number",
		"buffers sockq_len=1 umem_frames=1\n":           "lacks rx_ring",
	} {
		if _, err := ParseStackBuffers(strings.NewReader(dump)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseStackBuffers(%q) = %v, want %q", dump, err, want)
		}
	}
	dir := t.TempDir()
	if _, err := ReadStackBuffersDir(dir); !errors.Is(err, errNoStatsDump) {
		t.Errorf("no dump: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stats-1.txt"), []byte(statsDumpBuffers), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadStackBuffersDir(dir); err != nil || b.UMEMFrames != 2048 {
		t.Errorf("ReadStackBuffersDir = %+v, %v", b, err)
	}
}

func TestSockperfReceiveBuffer(t *testing.T) {
	out := "sockperf: Socket buffers sizes of fd 3: RX: 131072 Byte, TX: 131072 Byte\n\x1b[2;35msockperf: == version #3.7-no.git == \x1b[0m\n"
	if v, ok := SockperfReceiveBuffer(out); !ok || v != 131072 {
		t.Errorf("SockperfReceiveBuffer = %d, %v", v, ok)
	}
	if _, ok := SockperfReceiveBuffer("sockperf: [SERVER] listen on:\n"); ok {
		t.Error("a server given no --buffer-size reported a buffer")
	}
}

// The kernel's part is read from procfs (a fake tree here) and the server's output; without the
// output's line, a probe socket asks the kernel the same; a file that cannot be read is unknown
// and said, never 0.
func TestKernelBuffering(t *testing.T) {
	proc := t.TempDir()
	core := filepath.Join(proc, "sys/net/core")
	if err := os.MkdirAll(core, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(core, "rmem_default"), []byte("212992\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := kernelBuffering(proc, 65536, "sockperf: Socket buffers sizes of fd 3: RX: 131072 Byte, TX: 131072 Byte\n")
	if b.GrantedBytes == nil || *b.GrantedBytes != 131072 || b.RmemDefaultBytes == nil || *b.RmemDefaultBytes != 212992 || b.RmemMaxBytes != nil ||
		!strings.Contains(b.Missing, "net.core.rmem_max") {
		t.Errorf("buffering %+v", b)
	}
	// the probe: this process's own namespace, where the real limits are
	def, err := readSysctlInt("/proc/sys/net/core/rmem_default")
	if err != nil {
		testutil.Unavailable(t, "net.core.rmem_default unreadable: "+err.Error())
	}
	rmemMax, err := readSysctlInt("/proc/sys/net/core/rmem_max")
	if err != nil {
		testutil.Unavailable(t, "net.core.rmem_max unreadable: "+err.Error())
	}
	if got, err := probeReceiveBuffer(0); err != nil || got != def {
		t.Errorf("probe without a request = %d, %v; want rmem_default %d", got, err, def)
	}
	if got, err := probeReceiveBuffer(65536); err != nil || got != 2*min(65536, rmemMax) {
		t.Errorf("probe of 65536 = %d, %v; want %d", got, err, 2*min(65536, rmemMax))
	}
	b = kernelBuffering("/proc", 0, "")
	if b.Missing != "" || b.GrantedBytes == nil || *b.GrantedBytes != def || b.SocketQueueDatagrams != nil {
		t.Errorf("default buffering %+v", b)
	}
}

// A reflector gives its server the receive buffer asked for and reports the buffering at stop:
// the kernel's from procfs and the server's output, the bypass stack's from its dump. An older
// reflector is never asked for a buffer, and its missing report is unknown.
func TestReflectorReportsBuffering(t *testing.T) {
	dir := statsDumpDir(t, statsDumpBuffers)
	args := filepath.Join(dir, "args")
	t.Setenv("ARGS_FILE", args)
	server := writeScript(t, filepath.Join(dir, "sockperf"), statsDumpScript+`
[ "$1" = --version ] && { echo "sockperf: == version #3.7-fake =="; exit 0; }
echo "$@" >> "$ARGS_FILE"
while [ $# -gt 0 ]; do
	[ "$1" = --buffer-size ] && echo "sockperf: Socket buffers sizes of fd 3: RX: $(($2 * 2)) Byte, TX: $(($2 * 2)) Byte"
	shift
done
trap 'echo "sockperf: Total 5 messages received and handled"; dump; exit 0' INT
echo "sockperf: using recvfrom() to block on socket(s)"
while :; do sleep 0.05; done
`)
	c := startSockperfReflector(t, dir, server)
	if !c.Hello.ReceiveBuffers {
		t.Fatalf("greeting %+v does not offer receive buffers", c.Hello)
	}
	for _, stack := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		counters := startStop(t, c, ServerSpec{Stack: stack, Protocol: tsv1.ProtocolUDP, Port: 20000, ReceiveBufferBytes: 65536})
		b := counters.Buffering
		if b == nil || b.GrantedBytes == nil || *b.GrantedBytes != 131072 || b.RmemDefaultBytes == nil || b.RmemMaxBytes == nil || b.Missing != "" {
			t.Fatalf("%s buffering %+v", stack, b)
		}
		bypass := b.SocketQueueDatagrams != nil && *b.SocketQueueDatagrams == 4096 && b.UMEMFrames != nil && *b.UMEMFrames == 2048 &&
			b.RXRingEntries != nil && *b.RXRingEntries == 4096
		if bypass != (stack == tsv1.StackBypass) {
			t.Errorf("%s: the bypass stack's buffering %+v", stack, b)
		}
	}
	got, _ := os.ReadFile(args)
	if n := strings.Count(string(got), "--buffer-size 65536"); n != 2 {
		t.Errorf("servers started with %q, want --buffer-size 65536 on both", got)
	}
	// a bypass server whose library predates the buffers line: the rest is reported, that is said
	if err := os.WriteFile(os.Getenv("STATS_DUMP"), []byte(statsDump), 0o644); err != nil {
		t.Fatal(err)
	}
	counters := startStop(t, c, ServerSpec{Stack: tsv1.StackBypass, Protocol: tsv1.ProtocolUDP, Port: 20001})
	if b := counters.Buffering; b == nil || b.GrantedBytes == nil || b.SocketQueueDatagrams != nil || !strings.Contains(b.Missing, "no buffers line") {
		t.Errorf("an older library's buffering %+v", b)
	}
	if _, err := c.Start(ServerSpec{Stack: tsv1.StackKernel, Protocol: tsv1.ProtocolUDP, Port: 20002, ReceiveBufferBytes: 1024}); err == nil ||
		!strings.Contains(err.Error(), "receive buffer 1024 bytes out of range 4096..67108864") {
		t.Errorf("a buffer out of range: %v", err)
	}

	// an older reflector: asking it for a buffer is refused before anything starts, and a
	// server it stopped has unknown buffering
	c.Hello.ReceiveBuffers = false
	if _, err := c.Start(ServerSpec{Stack: tsv1.StackKernel, Protocol: tsv1.ProtocolUDP, Port: 20003, ReceiveBufferBytes: 65536}); !errors.Is(err, errReflectorBuffers) {
		t.Errorf("a buffer asked of an older reflector: %v", err)
	}
	if b := bufferingOf(&ReflectorCounters{}); b == nil || b.GrantedBytes != nil || !strings.Contains(b.Missing, "older tickstack-bench") {
		t.Errorf("an older reflector's buffering %+v", b)
	}
	if bufferingOf(nil) != nil {
		t.Error("no counters gave a buffering")
	}
}

// A real sockperf server on loopback asked for a receive buffer: it is granted what Linux grants
// a plain SO_RCVBUF request, twice the request capped at rmem_max.
func TestReflectorSockperfReceiveBuffer(t *testing.T) {
	testutil.RequireTool(t, "sockperf")
	c := startReflector(t, &Reflector{DataAddress: "127.0.0.1", Tools: Tools{Launcher: filepath.Join(t.TempDir(), "none")}})
	port := 20000 + (os.Getpid()+7)%20000
	counters := startStop(t, c, ServerSpec{Stack: tsv1.StackKernel, Protocol: tsv1.ProtocolUDP, Port: port, GapDetection: true, ReceiveBufferBytes: 65536})
	b := counters.Buffering
	if b == nil || b.Missing != "" || b.GrantedBytes == nil || b.RmemMaxBytes == nil || *b.GrantedBytes != 2*min(65536, *b.RmemMaxBytes) {
		t.Errorf("buffering %+v", b)
	}
	if v, ok := SockperfReceiveBuffer(counters.Output); !ok || b == nil || b.GrantedBytes == nil || v != *b.GrantedBytes {
		t.Errorf("the granted buffer is not the one sockperf printed (%d, %v): %s", v, ok, counters.Output)
	}
}

// startStop starts the server spec on c's reflector and stops it at once: its counters.
func startStop(t *testing.T, c *ReflectorClient, spec ServerSpec) *ReflectorCounters {
	t.Helper()
	id, err := c.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	counters, err := c.Stop(id)
	if err != nil {
		t.Fatal(err)
	}
	return counters
}

// startSockperfReflector starts a reflector on 127.0.0.1 whose sockperf is server (a script in
// dir) under a launcher that runs it as it is, with its work directory dir/work.
func startSockperfReflector(t *testing.T, dir, server string) *ReflectorClient {
	t.Helper()
	launcher := writeScript(t, filepath.Join(dir, "tickstack-run"), "shift 3\nexec \"$@\"\n")
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	return startReflector(t, &Reflector{DataAddress: "127.0.0.1", Tools: Tools{Sockperf: server, Launcher: launcher}, WorkDir: work})
}
