package bench

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"github.com/tickstack/tickstack/internal/ptp"
)

func ptr[T any](v T) *T { return &v }

func TestSummarizePTP(t *testing.T) {
	slave := func(off, delay int64) ptp.Sample {
		return ptp.Sample{PortState: ptp.PortStateSlave, OffsetNs: off, HasOffset: true, MeanPathDelayNs: delay}
	}
	cases := []struct {
		name    string
		samples []ptp.Sample
		want    tsv1.PTPResult
	}{
		{
			name:    "locked: |offset| statistics and signed extremes",
			samples: []ptp.Sample{slave(-40, 2000), slave(10, 2100), slave(25, 1900), slave(-5, 2050)},
			want: tsv1.PTPResult{Samples: 4, MinOffsetNs: -40, MaxOffsetNs: 25, MedianPathDelayNs: 2000,
				Offset:     tsv1.LatencyStats{Samples: 4, MinNs: 5, MedianNs: 10, MeanNs: 20, P95Ns: 40, P99Ns: 40, P999Ns: 40, MaxNs: 40, StdDevNs: 16},
				PortStates: []tsv1.PTPPortStateCount{{State: "SLAVE", Samples: 4}}},
		},
		{
			name: "states in order of appearance; offsets of other states left out",
			samples: []ptp.Sample{{PortState: ptp.PortStateListening}, {PortState: ptp.PortStateUncalibrated, OffsetNs: 900000, HasOffset: true},
				slave(7, 100), {PortState: ptp.PortStateUncalibrated, OffsetNs: -800000, HasOffset: true}, slave(-3, 100)},
			want: tsv1.PTPResult{Samples: 5, NotSlaveSamples: 3, MinOffsetNs: -3, MaxOffsetNs: 7, MedianPathDelayNs: 100,
				Offset:     tsv1.LatencyStats{Samples: 2, MinNs: 3, MedianNs: 3, MeanNs: 5, P95Ns: 7, P99Ns: 7, P999Ns: 7, MaxNs: 7, StdDevNs: 3},
				PortStates: []tsv1.PTPPortStateCount{{State: "LISTENING", Samples: 1}, {State: "UNCALIBRATED", Samples: 2}, {State: "SLAVE", Samples: 2}}},
		},
		{
			name:    "failed reads and SLAVE without an offset",
			samples: []ptp.Sample{slave(1, 10), {PortState: ptp.PortStateSlave}, {Err: errors.New("no response from ptp4l")}},
			want: tsv1.PTPResult{Samples: 3, FailedReads: 2, MinOffsetNs: 1, MaxOffsetNs: 1, MedianPathDelayNs: 10, LastFailure: "no response from ptp4l",
				Offset:     tsv1.LatencyStats{Samples: 1, MinNs: 1, MedianNs: 1, MeanNs: 1, P95Ns: 1, P99Ns: 1, P999Ns: 1, MaxNs: 1},
				PortStates: []tsv1.PTPPortStateCount{{State: "SLAVE", Samples: 1}}},
		},
		{
			name:    "nothing answered is an error",
			samples: []ptp.Sample{{Err: errors.New("no response from ptp4l")}, {Err: errors.New("no response from ptp4l")}},
			want: tsv1.PTPResult{Samples: 2, FailedReads: 2, LastFailure: "no response from ptp4l",
				Error: "none of 2 reads of /s was answered (is ptp4l running with this socket and domain 3?): no response from ptp4l"},
		},
		{
			name: "no read at all is an error",
			want: tsv1.PTPResult{Error: "no read finished before the run ended: run the ptp suite longer (ptp.durationSeconds) or read more often (ptp.intervalMillis)"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tsv1.PTPResult{Socket: "/s", Domain: 3}
			summarizePTP(&got, c.samples)
			c.want.Socket, c.want.Domain = "/s", 3
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestPTPDomainOf(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "ptp4l.sock")
	write := func(conf string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "ptp4l.conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *tsv1.PTPSuite, want int32, wantFrom, wantErr string) {
		t.Helper()
		got, from, err := ptpDomainOf(s)
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("ptpDomainOf = %d, %v; want an error containing %q", got, err, wantErr)
			}
			return
		}
		if err != nil || got != want || !strings.Contains(from, wantFrom) {
			t.Errorf("ptpDomainOf = %d from %q, %v; want %d from %q", got, from, err, want, wantFrom)
		}
	}
	check(&tsv1.PTPSuite{Socket: sock}, 0, "the default (no ", "")
	check(&tsv1.PTPSuite{Socket: sock, Domain: ptr(int32(9))}, 9, "ptp.domain", "")
	// The agent's rendering (internal/ptp.RenderPtp4lConfig).
	write("# ptp4l configuration rendered by the tickstack agent (role slave); edits are overwritten.\n[global]\ndomainNumber 24\nslaveOnly 1\n[eth1]\nnetwork_transport L2\n")
	check(&tsv1.PTPSuite{Socket: sock}, 24, filepath.Join(dir, "ptp4l.conf"), "")
	check(&tsv1.PTPSuite{Socket: sock, Domain: ptr(int32(0))}, 0, "ptp.domain", "")
	write("[global]\ndomainNumber 300\n")
	check(&tsv1.PTPSuite{Socket: sock}, 0, "", "domainNumber \"300\" is not 0..127: set ptp.domain")
	write("[global]\nslaveOnly 1\n[eth1]\ndomainNumber 5\n")
	check(&tsv1.PTPSuite{Socket: sock}, 0, "sets no domainNumber", "")
}

func TestPMCArgsBindTheReplySocketBesidePtp4l(t *testing.T) {
	r := ptp.PMC{Path: "pmc", UDSAddress: "/run/tickstack/ptp/ptp4l.sock", LocalAddress: "/run/tickstack/ptp/pmc.tsbench.7", Domain: 24}
	want := []string{"-u", "-b", "0", "-d", "24", "-s", "/run/tickstack/ptp/ptp4l.sock", "-i", "/run/tickstack/ptp/pmc.tsbench.7",
		"GET PORT_DATA_SET", "GET CURRENT_DATA_SET"}
	if got := r.Args(); !reflect.DeepEqual(got, want) {
		t.Errorf("pmc args %q, want %q", got, want)
	}
}
