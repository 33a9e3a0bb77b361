package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// jitter measures OS noise on the given CPUs with oslat and cyclictest.
func (r *Runner) jitter(ctx context.Context, s *tsv1.JitterSpec) *tsv1.JitterResult {
	res := &tsv1.JitterResult{}
	cpus, err := judge.ParseCPUList(s.CPUs)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	timeout := time.Duration(s.DurationSeconds)*time.Second + 60*time.Second
	for _, tool := range s.Tools {
		if ctx.Err() != nil {
			res.Error = joinErr(res.Error, ctx.Err().Error())
			return res
		}
		switch tool {
		case tsv1.JitterOslat:
			out, reps, err := runJitterTool(ctx, r, "oslat", r.Tools.Oslat, ParseOslat, timeout,
				"--cpu-list", s.CPUs, "-D", strconv.Itoa(int(s.DurationSeconds)), "-C", strconv.Itoa(mainCPU(cpus)), "-b", "1024", "-z")
			if err != nil {
				res.Error = joinErr(res.Error, err.Error())
				continue
			}
			if v := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]); strings.HasPrefix(v, "oslat V") {
				r.noteTool(v)
			}
			for _, o := range reps {
				res.Rows = append(res.Rows, tsv1.JitterRow{Tool: tsv1.JitterOslat, CPU: int32(o.CPU), LatencyStats: o.Stats()})
			}
		case tsv1.JitterCyclictest:
			_, reps, err := runJitterTool(ctx, r, "cyclictest", r.Tools.Cyclictest, ParseCyclictest, timeout,
				"-m", "-q", "-a", s.CPUs, "-t", strconv.Itoa(len(cpus)),
				"-p", strconv.Itoa(int(s.CyclictestPriority)), "-i", strconv.Itoa(int(s.CyclictestIntervalMicros)),
				"-D", strconv.Itoa(int(s.DurationSeconds)), "-h", "1000")
			if err != nil {
				res.Error = joinErr(res.Error, err.Error())
				continue
			}
			r.noteTool("cyclictest (rt-tests)")
			for i, c := range reps {
				cpu := -1
				if i < len(cpus) {
					cpu = cpus[i]
				}
				res.Rows = append(res.Rows, tsv1.JitterRow{Tool: tsv1.JitterCyclictest, CPU: int32(cpu), LatencyStats: c.Stats(), Overflows: c.Overflows})
			}
		}
	}
	return res
}

// runJitterTool runs a jitter tool (name, at configured or found on the PATH) on the kernel's
// stack with args and returns its output and the reports parse reads in it.
func runJitterTool[T any](ctx context.Context, r *Runner, name, configured string, parse func(string) ([]T, error),
	timeout time.Duration, args ...string) (string, []T, error) {
	p, err := r.Tools.path(name, configured)
	if err != nil {
		return "", nil, err
	}
	cmd, _ := r.Tools.command(ctx, tsv1.StackKernel, "", p, args...)
	r.logf("%s", strings.Join(cmd.Args, " "))
	out, err := runTool(ctx, cmd, timeout)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %v", name, err)
	}
	reps, err := parse(out)
	return out, reps, err
}

// mainCPU picks the CPU for oslat's main thread: one this process may run on that is not measured,
// else the first measured one (oslat's default, CPU 0, may be outside a pinned pod's cpuset).
func mainCPU(measured []int) int {
	if allowed := affinityOf(0); allowed != nil {
		in := map[int]bool{}
		for _, c := range measured {
			in[c] = true
		}
		for _, c := range allowed {
			if !in[c] {
				return c
			}
		}
	}
	return measured[0]
}
