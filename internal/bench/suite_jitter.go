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
			p, err := r.Tools.path("oslat", r.Tools.Oslat)
			if err != nil {
				res.Error = joinErr(res.Error, err.Error())
				continue
			}
			cmd, _ := r.Tools.command(ctx, tsv1.StackKernel, "", p, "--cpu-list", s.CPUs, "-D", strconv.Itoa(int(s.DurationSeconds)), "-C", strconv.Itoa(mainCPU(cpus)), "-b", "1024", "-z")
			r.logf("%s", strings.Join(cmd.Args, " "))
			out, err := runTool(ctx, cmd, timeout)
			if err != nil {
				res.Error = joinErr(res.Error, fmt.Sprintf("oslat: %v", err))
				continue
			}
			reps, err := ParseOslat(out)
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
			p, err := r.Tools.path("cyclictest", r.Tools.Cyclictest)
			if err != nil {
				res.Error = joinErr(res.Error, err.Error())
				continue
			}
			cmd, _ := r.Tools.command(ctx, tsv1.StackKernel, "", p, "-m", "-q", "-a", s.CPUs, "-t", strconv.Itoa(len(cpus)),
				"-p", strconv.Itoa(int(s.CyclictestPriority)), "-i", strconv.Itoa(int(s.CyclictestIntervalMicros)),
				"-D", strconv.Itoa(int(s.DurationSeconds)), "-h", "1000")
			r.logf("%s", strings.Join(cmd.Args, " "))
			out, err := runTool(ctx, cmd, timeout)
			if err != nil {
				res.Error = joinErr(res.Error, fmt.Sprintf("cyclictest: %v", err))
				continue
			}
			reps, err := ParseCyclictest(out)
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
