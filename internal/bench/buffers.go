package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The receive buffering of a run is read where it applies: on the reflector, whose sockperf
// server receives, in its network namespace (docs/benchmark-methods.md "Bounds, buffers and
// stalls"). The kernel's side is net.core.rmem_default and rmem_max and what the server's socket
// was granted; the bypass stack's side is what its statistics dump states (docs/dataplane.md
// "Statistics"). A value that cannot be read stays unknown and Missing says why.

// sockperfRcvBufRe is what sockperf 3.7 prints after setting --buffer-size: the socket's
// getsockopt(SO_RCVBUF) and (SO_SNDBUF).
var sockperfRcvBufRe = regexp.MustCompile(`Socket buffers sizes of fd \d+:\s*RX:\s*(\d+)\s*Byte`)

// SockperfReceiveBuffer returns the SO_RCVBUF a sockperf server printed it was granted; false
// when it printed none (it prints it only when given --buffer-size).
func SockperfReceiveBuffer(output string) (int64, bool) {
	m := sockperfRcvBufRe.FindStringSubmatch(CleanSockperfOutput(output))
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	return v, err == nil
}

// probeReceiveBuffer opens a UDP socket in this process's network namespace, asks for requested
// bytes of SO_RCVBUF as sockperf does (plain SO_RCVBUF; 0: nothing asked) and returns what the
// kernel granted: getsockopt(SO_RCVBUF).
func probeReceiveBuffer(requested int64) (int64, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|sockCloexec, 0)
	if err != nil {
		return 0, fmt.Errorf("opening a UDP socket: %w", err)
	}
	defer unix.Close(fd)
	if requested > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, int(requested)); err != nil {
			return 0, fmt.Errorf("setsockopt(SO_RCVBUF, %d): %w", requested, err)
		}
	}
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return 0, fmt.Errorf("getsockopt(SO_RCVBUF): %w", err)
	}
	return int64(v), nil
}

// readSysctlInt reads one integer sysctl file (/proc/sys/net/core/rmem_max).
func readSysctlInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", path, strings.TrimSpace(string(b)))
	}
	return v, nil
}

// kernelBuffering is the kernel's part of a server's receive buffering: net.core.rmem_default
// and rmem_max under proc, and what the server's socket was granted, from its output, else from a
// probe socket given the same request.
func kernelBuffering(proc string, requested int64, serverOutput string) *tsv1.ReceiveBuffering {
	b := &tsv1.ReceiveBuffering{}
	var missing []string
	for _, s := range []struct {
		name string
		dst  **int64
	}{{"rmem_default", &b.RmemDefaultBytes}, {"rmem_max", &b.RmemMaxBytes}} {
		v, err := readSysctlInt(filepath.Join(proc, "sys/net/core", s.name))
		if err != nil {
			missing = append(missing, fmt.Sprintf("net.core.%s: %v", s.name, err))
			continue
		}
		*s.dst = &v
	}
	if g, ok := SockperfReceiveBuffer(serverOutput); ok {
		b.GrantedBytes = &g
	} else if g, err := probeReceiveBuffer(requested); err == nil {
		b.GrantedBytes = &g
	} else {
		missing = append(missing, "granted SO_RCVBUF: "+err.Error())
	}
	b.Missing = strings.Join(missing, "; ")
	return b
}

// StackBuffers is the bypass stack's receive buffering below its sockets, from the "buffers"
// line of its statistics dump.
type StackBuffers struct {
	SocketQueueDatagrams int64
	UMEMFrames           int64
	RXRingEntries        int64
}

// errNoBuffersLine says a statistics dump states no buffering: a library older than the line.
var errNoBuffersLine = errors.New("the stack's statistics dump has no buffers line (a data plane older than the benchmark runner)")

// ParseStackBuffers reads the "buffers" line of a statistics dump (the first, when several
// processes appended theirs: one process's settings are every process's, as they share the
// environment).
func ParseStackBuffers(r io.Reader) (StackBuffers, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "buffers" {
			continue
		}
		var b StackBuffers
		want := map[string]*int64{"sockq_len": &b.SocketQueueDatagrams, "umem_frames": &b.UMEMFrames, "rx_ring": &b.RXRingEntries}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			if dst, ok := want[k]; ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return StackBuffers{}, fmt.Errorf("the stack's buffers line: %s is not a number", kv)
				}
				*dst = n
				delete(want, k)
			}
		}
		if len(want) > 0 {
			var names []string
			for k := range want {
				names = append(names, k)
			}
			return StackBuffers{}, fmt.Errorf("the stack's buffers line lacks %s", strings.Join(names, ", "))
		}
		return b, nil
	}
	if err := sc.Err(); err != nil {
		return StackBuffers{}, fmt.Errorf("reading the stack's statistics dump: %w", err)
	}
	return StackBuffers{}, errNoBuffersLine
}

// ReadStackBuffersDir reads the buffering from the dumps in dir (the directory
// TICKSTACK_STATS_FILE pointed into).
func ReadStackBuffersDir(dir string) (StackBuffers, error) {
	files, err := filepath.Glob(filepath.Join(dir, strings.Replace(statsFileName, "%p", "*", 1)))
	if err != nil {
		return StackBuffers{}, err
	}
	if len(files) == 0 {
		return StackBuffers{}, errNoStatsDump
	}
	var last error
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return StackBuffers{}, err
		}
		b, err := ParseStackBuffers(f)
		f.Close()
		if err == nil {
			return b, nil
		}
		last = err
	}
	return StackBuffers{}, last
}

// withStackBuffers adds the bypass stack's buffering to b, or says why it is missing.
func withStackBuffers(b *tsv1.ReceiveBuffering, sb StackBuffers, err error) {
	if err != nil {
		b.Missing = joinErr(b.Missing, "the bypass stack's buffering: "+err.Error())
		return
	}
	b.SocketQueueDatagrams = ptrTo(sb.SocketQueueDatagrams)
	b.UMEMFrames = ptrTo(sb.UMEMFrames)
	b.RXRingEntries = ptrTo(sb.RXRingEntries)
}

func ptrTo[T any](v T) *T { return &v }

// errReflectorBuffers says the reflector cannot be asked for a receive buffer.
var errReflectorBuffers = errors.New("the reflector cannot set its servers' receive buffer (an older tickstack-bench): run the same tickstack-bench on both sides, or leave receiveBufferBytes empty")

// bufferingOf is the buffering a stopped server's counters carry: nil when there are no
// counters (the server did not start or stop cleanly: try the next run), unknown with the
// reason when the reflector reported none.
func bufferingOf(c *ReflectorCounters) *tsv1.ReceiveBuffering {
	switch {
	case c == nil:
		return nil
	case c.Buffering == nil:
		return &tsv1.ReceiveBuffering{Missing: "the reflector reports no buffering (an older tickstack-bench)"}
	}
	return c.Buffering
}
