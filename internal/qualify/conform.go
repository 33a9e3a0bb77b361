package qualify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench"
)

// conformNotRun is the case name of a conformance run that could not start.
const conformNotRun = "notRun"

// conformCases are the cases of dataplane/tests/conform.sh that need nothing but the link and
// the peer (no second address, multicast route, jumbo MTU or TCP): each must print the same
// transcript on the kernel and through the stack, and the stack's XSK must have carried the
// datagrams (rx_accel > 0; xskonly: and none was read from the kernel socket).
var conformCases = []struct{ name, path string }{
	{"cmsg", "accel"}, {"tsing", "xskonly"}, {"flags", "accel"}, {"iov", "accel"},
	{"mmsg", "accel"}, {"connect", "accel"}, {"epoll", "accel"},
}

// conformance starts the peer on the reflector and runs each case twice, as conform.sh does.
func conformance(ctx context.Context, o *Options, launcher string, r *tsv1.QualifyReport) {
	port := o.port(10)
	bin, err := o.Tools.FindConform()
	if err == nil {
		err = o.Reflector.ConformPeer(port)
	}
	if err != nil {
		r.Conformance = []tsv1.QualifyConformance{{Case: conformNotRun, Detail: "the conformance cases did not run: " + err.Error()}}
		return
	}
	for _, c := range conformCases {
		r.Conformance = append(r.Conformance, conformCase(ctx, o, launcher, bin, c.name, c.path, r.Peer, port))
	}
}

func conformCase(ctx context.Context, o *Options, launcher, bin, name, path, peer string, port int) tsv1.QualifyConformance {
	res := tsv1.QualifyConformance{Case: name}
	dir := filepath.Join(o.WorkDir, "conform-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.Detail = err.Error()
		return res
	}
	run := func(env []string, argv ...string) string {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
		cmd.Env = append(withoutPreload(os.Environ()), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			code = -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
		}
		return string(out) + "exit " + strconv.Itoa(code) + "\n"
	}
	args := []string{bin, name, peer, strconv.Itoa(port)}
	kernel := run(nil, args...)
	stack := run([]string{"TICKSTACK_STATS_FILE=" + filepath.Join(dir, "stats-%p.txt"), "TICKSTACK_IFACES=" + o.Interface},
		append([]string{launcher, "-p", bench.LauncherProfile, "--require"}, args...)...)
	_ = os.WriteFile(filepath.Join(dir, "kernel"), []byte(kernel), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "stack"), []byte(stack), 0o644)
	if kernel != stack {
		res.Detail = "differs from the kernel: " + firstDiff(kernel, stack)
		return res
	}
	accel := statSum(dir, "sock", "rx_accel")
	switch path {
	case "xskonly":
		k, shared := statSum(dir, "sock", "rx_kernel"), statSum(dir, "tickstack", "kernel_shared")
		if accel == 0 || k != 0 || shared != 0 {
			res.Detail = fmt.Sprintf("equal, but not all through the XSK (rx_accel=%d rx_kernel=%d kernel_shared=%d)", accel, k, shared)
			return res
		}
	default:
		if accel == 0 {
			res.Detail = "equal, but nothing came through the XSK (rx_accel=0)"
			return res
		}
	}
	res.Passed = true
	return res
}

// firstDiff names the first line where two transcripts differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: kernel %q, stack %q", i+1, x, y)
		}
	}
	return "(equal)"
}

// statSum sums FIELD=N over the lines starting with "KIND " of every statistics dump in dir
// (tests/lib.sh stat_sum).
func statSum(dir, kind, field string) int64 {
	files, _ := filepath.Glob(filepath.Join(dir, "stats-*.txt"))
	var sum int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, kind+" ") {
				continue
			}
			for _, kv := range strings.Fields(l) {
				if v, ok := strings.CutPrefix(kv, field+"="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					sum += n
				}
			}
		}
	}
	return sum
}
