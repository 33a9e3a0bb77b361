package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The bypass stack dumps its counters when a process exits if TICKSTACK_STATS_FILE names a file
// ("%p" in the name is replaced by the process id); docs/dataplane.md "Statistics" describes them.
// The runner sets it for every sockperf it starts on the bypass stack, on both sides, and reads the
// dump back into the row's stall report.
const (
	statsFileEnv  = "TICKSTACK_STATS_FILE"
	statsFileName = "stats-%p.txt"
)

// StackCounters are the exit counters of the bypass stack's processes of one run, by
// "<line>.<counter>" ("xsk.tx_ring_full"), summed over the processes, XSKs and sockets.
type StackCounters map[string]int64

// statsLineKinds names the lines of the dump by their first word; "tickstack stats ..." is the
// process line.
var statsLineKinds = map[string]string{"tickstack": "process", "xsk": "xsk", "sock": "sock", "tcp": "tcp", "nh": "nh"}

// statsIdentity are the fields of a dump line that name what it is about, not counters.
var statsIdentity = map[string]bool{"pid": true, "profile": true, "if": true, "ifindex": true, "queue": true, "mode": true, "tx_csum": true,
	"fd": true, "local": true, "remote": true, "accelerated": true, "closed": true}

// ParseStackStats reads the bypass stack's exit dumps (one or more, appended) and sums their
// counters. Lines of an unknown kind and fields that are not counters are skipped, so a newer
// library's dump still reads.
func ParseStackStats(r io.Reader) (StackCounters, error) {
	out := StackCounters{}
	if err := scanStats(r, out.add); err != nil {
		return nil, err
	}
	return out, nil
}

// add sums the counters of one dump line (scanStats).
func (c StackCounters) add(first string, fields []string) {
	kind, ok := statsLineKinds[first]
	if !ok {
		return
	}
	for _, kv := range fields {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || statsIdentity[k] {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		c[kind+"."+k] += n
	}
}

// scanStats calls fn with the first word and the other fields of every line of a dump.
func scanStats(r io.Reader, fn func(first string, fields []string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			fn(f[0], f[1:])
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the stack's statistics dump: %w", err)
	}
	return nil
}

// errNoStatsDump says a bypass run left no statistics dump (the process was killed, or the
// library could not write the file).
var errNoStatsDump = errors.New("no statistics dump was written")

// scanStatsDir is scanStats over the dumps of every process in dir (the directory
// TICKSTACK_STATS_FILE pointed into); errNoStatsDump when there are none.
func scanStatsDir(dir string, fn func(first string, fields []string)) error {
	files, err := filepath.Glob(filepath.Join(dir, strings.Replace(statsFileName, "%p", "*", 1)))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return errNoStatsDump
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = scanStats(f, fn)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadStackStatsDir sums the dumps of every process in dir (the directory TICKSTACK_STATS_FILE
// pointed into).
func ReadStackStatsDir(dir string) (StackCounters, error) {
	out := StackCounters{}
	if err := scanStatsDir(dir, out.add); err != nil {
		return nil, err
	}
	return out, nil
}

// stallCounters are the stack's counters that stay zero in an undisturbed run, in the order the
// report lists them: waits on a full TX ring or an empty fill ring, drops, fallbacks to the kernel,
// next-hop refreshes and the sends they held up, failed wake-ups, TCP retransmissions. Counters of
// normal traffic (packets, kicks, nh.misses: one per flow) are not among them, nor tcp.resets (a
// TCP run may end with one when the client closes).
var stallCounters = []string{
	"xsk.tx_ring_full", "xsk.fill_ring_empty", "xsk.fill_wakeups", "xsk.tx_kick_errors",
	"xsk.rx_sockq_full", "xsk.rx_no_socket", "xsk.rx_bad", "xsk.rx_bad_csum",
	"xsk.xdp_rx_dropped", "xsk.xdp_rx_ring_full", "xsk.xdp_fill_empty", "xsk.xdp_rx_invalid", "xsk.xdp_tx_invalid",
	"nh.refreshes", "nh.wait_timeouts",
	"process.fallback_events", "process.sockets_kernel", "process.kernel_option", "process.kernel_uring", "process.kernel_shared",
	"sock.rx_kernel", "sock.tx_kernel", "sock.rx_drops", "sock.rx_spilled", "sock.rx_filtered",
	"sock.tx_kernel_noroute", "sock.tx_kernel_neigh", "sock.tx_kernel_local", "sock.tx_kernel_oversize",
	"sock.tx_kernel_nostack", "sock.tx_kernel_flags", "sock.tx_kernel_mcloop",
	"tcp.conns_kernel", "tcp.rx_no_netif", "tcp.tx_noroute", "tcp.tx_neigh", "tcp.tx_ring_full",
	"tcp.newreno_rexmits", "tcp.early_rexmits", "tcp.listen_overflow",
}

// StallCounters returns the counters among stallCounters that are not zero.
func (c StackCounters) StallCounters() []tsv1.StackCounter {
	var out []tsv1.StackCounter
	for _, name := range stallCounters {
		if v := c[name]; v != 0 {
			out = append(out, tsv1.StackCounter{Name: name, Value: v})
		}
	}
	return out
}

// withStatsDir, for a command on the bypass stack, makes a directory in workDir (named after
// pattern, as os.MkdirTemp names it) and makes the command dump the stack's counters into it at
// exit; the caller removes it. On the kernel's stack it does nothing and returns "".
func withStatsDir(cmd *exec.Cmd, stack tsv1.Stack, workDir, pattern string) (string, error) {
	if stack != tsv1.StackBypass {
		return "", nil
	}
	dir, err := os.MkdirTemp(workDir, pattern)
	if err != nil {
		return "", fmt.Errorf("creating a directory for the stack's statistics: %w", err)
	}
	cmd.Env = append(os.Environ(), statsFileEnv+"="+filepath.Join(dir, statsFileName))
	return dir, nil
}

// stallReport is a row's stall report: the stalls in its run's full log, each attributed with
// what the samplers on both sides saw (r.attribute), and, on the bypass stack, the counters of the
// runner's sockperf and of the reflector's server.
func (r *Runner) stallReport(stack tsv1.Stack, run clientOutcome, p999Ns int64, refl *ReflectorCounters) *tsv1.StallReport {
	rep := DetectStalls(run.rows, p999Ns)
	r.attribute(rep, stack, run, refl)
	if stack != tsv1.StackBypass {
		return rep
	}
	var missing []string
	rep.Counters = run.counters.StallCounters()
	if run.countersErr != nil {
		missing = append(missing, "runner: "+run.countersErr.Error())
	}
	switch {
	case refl == nil || (refl.Stack == nil && refl.StackMissing == ""):
		missing = append(missing, "reflector: it sent no counters")
	case refl.StackMissing != "":
		missing = append(missing, "reflector: "+refl.StackMissing)
	default:
		rep.ReflectorCounters = refl.Stack.StallCounters()
	}
	rep.CountersMissing = strings.Join(missing, "; ")
	return rep
}
