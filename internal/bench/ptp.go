package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"

	"github.com/tickstack/tickstack/internal/ptp"
)

// The ptp suite reads ptp4l's port state and offset from its master with pmc, like the node agent
// does (ptp.PMC), through the socket the agent serves read-only (ptp.ReadOnlyProxy: GET only),
// which is all of the host's PTP a benchmark pod mounts. pmc binds its reply socket in the
// runner's work directory (PMC.LocalAddress, pmc -i): the agent finds it through the pmc process's
// root, so it needs no directory shared with the host, and the pod no writable host path.

// pmcSocketPrefix names pmc's reply socket, followed by the runner's process id and a random
// number.
const pmcSocketPrefix = "pmc.tsbench."

// ptpDomainOf returns the domain to read with: the spec's, else the domainNumber of the ptp4l.conf
// beside the socket (where the node agent writes it), else 0. from says which.
func ptpDomainOf(s *tsv1.PTPSuite) (domain int32, from string, err error) {
	if s.Domain != nil {
		return *s.Domain, "ptp.domain", nil
	}
	conf := filepath.Join(filepath.Dir(s.Socket), "ptp4l.conf")
	f, err := os.Open(conf)
	if errors.Is(err, os.ErrNotExist) {
		return 0, "the default (no " + conf + ")", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("reading ptp4l's domain from %s: %w: set ptp.domain", conf, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if strings.HasPrefix(sc.Text(), "[") && sc.Text() != "[global]" {
			break // domainNumber is a [global] option
		}
		if len(fields) == 2 && fields[0] == "domainNumber" {
			v, err := strconv.ParseInt(fields[1], 10, 32)
			if err != nil || v < 0 || v > judge.MaxPTPDomain {
				return 0, "", fmt.Errorf("%s: domainNumber %q is not 0..%d: set ptp.domain", conf, fields[1], judge.MaxPTPDomain)
			}
			return int32(v), conf, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, "", fmt.Errorf("reading ptp4l's domain from %s: %w: set ptp.domain", conf, err)
	}
	return 0, "the default (" + conf + " sets no domainNumber)", nil
}

// startPTP starts sampling ptp4l every s.IntervalMillis, the first read at once; the returned
// function stops the sampling and returns the table. A read cut short by the stop is not counted.
func (r *Runner) startPTP(ctx context.Context, s *tsv1.PTPSuite) (stop func() *tsv1.PTPResult) {
	res := &tsv1.PTPResult{Socket: s.Socket, IntervalMillis: s.IntervalMillis}
	pmcPath, err := r.Tools.path("pmc", r.Tools.Pmc)
	if err == nil {
		res.Domain, _, err = ptpDomainOf(s)
	}
	if err != nil {
		res.Error = err.Error()
		r.logf("ptp: %s", res.Error)
		return func() *tsv1.PTPResult { return res }
	}
	if out, verr := exec.CommandContext(ctx, pmcPath, "-v").CombinedOutput(); verr == nil {
		r.noteTool("linuxptp pmc " + strings.TrimSpace(string(out)))
	}
	replyDir := r.WorkDir
	if replyDir == "" || len(replyDir)+len("/"+pmcSocketPrefix+"4194304.ffffffff") > judge.MaxUDSPath {
		replyDir = os.TempDir() // the path must fit a UNIX socket address
	}
	reader := ptp.PMC{Path: pmcPath, UDSAddress: s.Socket, Domain: int(res.Domain),
		LocalAddress: filepath.Join(replyDir, fmt.Sprintf("%s%d.%08x", pmcSocketPrefix, os.Getpid(), rand.Uint32()))}
	r.logf("ptp: reading %s (domain %d) every %d ms", s.Socket, res.Domain, s.IntervalMillis)

	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var samples []ptp.Sample
	go func() {
		defer close(done)
		t := time.NewTicker(time.Duration(s.IntervalMillis) * time.Millisecond)
		defer t.Stop()
		for {
			smp := reader.Read(ctx)
			if ctx.Err() != nil {
				return
			}
			// The system clock's offset the node agent publishes beside the socket, when fresh.
			if off, at, ok := ptp.ReadSystemOffset(filepath.Dir(s.Socket)); ok && time.Since(at) <= systemOffsetMaxAge(s) {
				smp.SystemOffsetNs, smp.HasSystemOffset = off, true
			}
			samples = append(samples, smp)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() *tsv1.PTPResult {
		cancel()
		<-done
		summarizePTP(res, samples)
		r.logf("ptp: %d samples, %d not SLAVE, %d failed; |offset| median %s us p99 %s us max %s us",
			res.Samples, res.NotSlaveSamples, res.FailedReads, judge.FormatNanosAsMicros(res.Offset.MedianNs),
			judge.FormatNanosAsMicros(res.Offset.P99Ns), judge.FormatNanosAsMicros(res.Offset.MaxNs))
		return res
	}
}

// systemOffsetMaxAge is how old the agent's published system clock offset may be to count: the
// agent refreshes it every second; a stopped agent's is stale.
func systemOffsetMaxAge(s *tsv1.PTPSuite) time.Duration {
	return 3*time.Second + 2*time.Duration(s.IntervalMillis)*time.Millisecond
}

// summarizePTP fills the table from the samples in the order they were read. A read that got a
// port state but no offset in SLAVE state counts as failed: the offset is what the suite measures.
func summarizePTP(res *tsv1.PTPResult, samples []ptp.Sample) {
	var abs, delays, sysAbs []int64
	counts := map[string]int{}
	res.Samples = int64(len(samples))
	for _, s := range samples {
		switch {
		case s.Err != nil || s.PortState == ptp.PortStateUnknown:
			res.FailedReads++
			if s.Err != nil {
				res.LastFailure = s.Err.Error()
			} else {
				res.LastFailure = "pmc answered without a port state"
			}
			continue
		case s.PortState == ptp.PortStateSlave && !s.HasOffset:
			res.FailedReads++
			res.LastFailure = "ptp4l answered GET PORT_DATA_SET (SLAVE) but not GET CURRENT_DATA_SET"
			continue
		}
		state := string(s.PortState)
		if i, ok := counts[state]; ok {
			res.PortStates[i].Samples++
		} else {
			counts[state] = len(res.PortStates)
			res.PortStates = append(res.PortStates, tsv1.PTPPortStateCount{State: state, Samples: 1})
		}
		if s.PortState != ptp.PortStateSlave {
			res.NotSlaveSamples++
			continue
		}
		if len(abs) == 0 || s.OffsetNs < res.MinOffsetNs {
			res.MinOffsetNs = s.OffsetNs
		}
		if len(abs) == 0 || s.OffsetNs > res.MaxOffsetNs {
			res.MaxOffsetNs = s.OffsetNs
		}
		a := s.OffsetNs
		if a < 0 {
			a = -a
		}
		abs = append(abs, a)
		delays = append(delays, s.MeanPathDelayNs)
		if s.HasSystemOffset {
			sa := s.SystemOffsetNs
			if sa < 0 {
				sa = -sa
			}
			sysAbs = append(sysAbs, sa)
		}
	}
	res.Offset = ComputeStats(abs)
	if len(sysAbs) > 0 {
		st := ComputeStats(sysAbs)
		res.SystemOffset = &st
	}
	if len(delays) > 0 {
		sort.Slice(delays, func(a, b int) bool { return delays[a] < delays[b] })
		res.MedianPathDelayNs = delays[percentileRank(len(delays), 50)]
	}
	switch res.Samples {
	case 0:
		res.Error = "no read finished before the run ended: run the ptp suite longer (ptp.durationSeconds) or read more often (ptp.intervalMillis)"
	case res.FailedReads:
		res.Error = fmt.Sprintf("none of %d reads of %s was answered (is ptp4l running with this socket and domain %d?): %s", res.Samples, res.Socket, res.Domain, res.LastFailure)
	}
}
