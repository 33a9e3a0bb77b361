package ptp

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// pmcSlave is pmc 3.1.1's answer from a software-timestamping slave on a veth pair.
const pmcSlave = `sending: GET PORT_DATA_SET
sending: GET CURRENT_DATA_SET
	8e7afc.fffe.16160e-1 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET 
		portIdentity            8e7afc.fffe.16160e-1
		portState               SLAVE
		logMinDelayReqInterval  0
		peerMeanPathDelay       0
		logAnnounceInterval     -2
		announceReceiptTimeout  3
		logSyncInterval         -3
		delayMechanism          1
		logMinPdelayReqInterval 0
		versionNumber           2
	8e7afc.fffe.16160e-0 seq 1 RESPONSE MANAGEMENT CURRENT_DATA_SET 
		stepsRemoved     1
		offsetFromMaster -116.4
		meanPathDelay    2208.0
`

func TestParsePMC(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    Sample
		wantErr error
		anyErr  bool // some error, of no particular kind
	}{
		{name: "slave with offset", out: pmcSlave,
			want: Sample{PortState: PortStateSlave, OffsetNs: -116, HasOffset: true, MeanPathDelayNs: 2208, StepsRemoved: 1}},
		{name: "master", out: `sending: GET PORT_DATA_SET
	4e5e57.fffe.d12585-1 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET 
		portIdentity            4e5e57.fffe.d12585-1
		portState               MASTER
	4e5e57.fffe.d12585-0 seq 1 RESPONSE MANAGEMENT CURRENT_DATA_SET 
		stepsRemoved     0
		offsetFromMaster 0.0
		meanPathDelay    0.0
`, want: Sample{PortState: PortStateMaster, HasOffset: true}},
		{name: "port data only", out: `	x-1 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET 
		portState               LISTENING
`, want: Sample{PortState: PortStateListening}},
		{name: "a boundary clock: every port, SLAVE if one is", out: `	x-2 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET 
		portIdentity            4e5e57.fffe.d12585-2
		portState               SLAVE
	x-1 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET 
		portIdentity            4e5e57.fffe.d12585-1
		portState               MASTER
`, want: Sample{PortState: PortStateSlave, Ports: []PortSample{{1, PortStateMaster}, {2, PortStateSlave}}}},
		{name: "no port SLAVE: the first port's state", out: `	x-1 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET 
		portState               FAULTY
	x-2 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET 
		portState               MASTER
`, want: Sample{PortState: PortStateFaulty, Ports: []PortSample{{1, PortStateFaulty}, {2, PortStateMaster}}}},
		{name: "no answer (ptp4l down)", out: "sending: GET PORT_DATA_SET\nsending: GET CURRENT_DATA_SET\n", wantErr: ErrNoResponse},
		{name: "current data set without port data", out: `	x-0 seq 1 RESPONSE MANAGEMENT CURRENT_DATA_SET 
		offsetFromMaster 3.0
`, wantErr: ErrNoResponse},
		{name: "garbled offset", out: `	x-1 seq 0 RESPONSE MANAGEMENT PORT_DATA_SET 
		portState               SLAVE
	x-0 seq 1 RESPONSE MANAGEMENT CURRENT_DATA_SET 
		offsetFromMaster abc
`, anyErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePMC(tt.out)
			switch {
			case tt.anyErr:
				if err == nil {
					t.Fatalf("ParsePMC() = %+v, want an error", got)
				}
				return
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ParsePMC() error = %v, want %v", err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("ParsePMC() error = %v", err)
			}
			if want := onePort(tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("ParsePMC() = %+v, want %+v", got, want)
			}
		})
	}
}

func TestLogParser(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name    string
		lines   []string
		advance time.Duration
		want    Sample
		wantErr bool
	}{
		{name: "nothing yet", wantErr: true},
		{name: "state changes, port 0 ignored", lines: []string{
			"ptp4l[314.544]: port 1: INITIALIZING to LISTENING on INIT_COMPLETE",
			"ptp4l[314.544]: port 0: INITIALIZING to LISTENING on INIT_COMPLETE",
			"ptp4l[316.037]: port 1: LISTENING to UNCALIBRATED on RS_SLAVE",
			"ptp4l[316.037]: port 0: LISTENING to MASTER on whatever",
		}, want: Sample{PortState: PortStateUncalibrated}},
		{name: "linuxptp 4 port names and offsets", lines: []string{
			"ptp4l[316.037]: port 1 (eth0): UNCALIBRATED to SLAVE on MASTER_CLOCK_SELECTED",
			"ptp4l[317.100]: master offset        -12 s2 freq   +1234 path delay      5678",
		}, want: Sample{PortState: PortStateSlave, OffsetNs: -12, MeanPathDelayNs: 5678, HasOffset: true}},
		{name: "summary lines give the max", lines: []string{
			"ptp4l[316.037]: port 1: UNCALIBRATED to SLAVE on MASTER_CLOCK_SELECTED",
			"ptp4l[339.690]: rms  774 max 1285 freq     +0 +/-   0 delay  2343 +/-   0",
		}, want: Sample{PortState: PortStateSlave, OffsetNs: 1285, MeanPathDelayNs: 2343, HasOffset: true}},
		{name: "stale offset is dropped", lines: []string{
			"ptp4l[316.037]: port 1: UNCALIBRATED to SLAVE on MASTER_CLOCK_SELECTED",
			"ptp4l[317.100]: master offset         40 s2 freq   -3 path delay  900",
		}, advance: 11 * time.Second, want: Sample{PortState: PortStateSlave}},
		{name: "a boundary clock: the SLAVE port makes the clock SLAVE", lines: []string{
			"ptp4l[314.544]: port 1: INITIALIZING to LISTENING on INIT_COMPLETE",
			"ptp4l[314.544]: port 2: INITIALIZING to LISTENING on INIT_COMPLETE",
			"ptp4l[316.037]: port 2: LISTENING to MASTER on ANNOUNCE_RECEIPT_TIMEOUT_EXPIRES",
			"ptp4l[316.037]: port 1: LISTENING to UNCALIBRATED on RS_SLAVE",
			"ptp4l[316.900]: port 1: UNCALIBRATED to SLAVE on MASTER_CLOCK_SELECTED",
		}, want: Sample{PortState: PortStateSlave, Ports: []PortSample{{1, PortStateSlave}, {2, PortStateMaster}}}},
		{name: "other programs' lines ignored", lines: []string{
			"phc2sys[317.100]: port 1: LISTENING to SLAVE on x",
			"ptp4l[316.037]: selected best master clock 4e5e57.fffe.d12585",
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := now
			p := &LogParser{Now: func() time.Time { return clock }}
			for _, l := range tt.lines {
				p.Line(l)
			}
			clock = clock.Add(tt.advance)
			got := p.Read(context.Background())
			if tt.wantErr {
				if got.Err == nil {
					t.Fatalf("Read() = %+v, want an error", got)
				}
				return
			}
			if want := onePort(tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("Read() = %+v, want %+v", got, want)
			}
			p.Reset()
			if s := p.Read(context.Background()); s.Err == nil {
				t.Errorf("Read() after Reset = %+v, want an error", s)
			}
		})
	}
}

func TestPMCWithoutPtp4l(t *testing.T) {
	tsutil.RequireRoot(t) // pmc binds its own socket under /var/run
	pmc := tsutil.RequireTool(t, "pmc")
	sock := filepath.Join(t.TempDir(), "absent.sock")
	s := PMC{Path: pmc, UDSAddress: sock, Domain: 3, Attempts: 2}.Read(context.Background())
	if s.Err == nil || !strings.Contains(s.Err.Error(), sock) {
		t.Fatalf("Read() with no ptp4l = %+v, want an error naming %s", s, sock)
	}
	if s.PortState != PortStateUnknown || s.HasOffset {
		t.Errorf("Read() with no ptp4l filled a state: %+v", s)
	}
}

// onePort completes a single-port want with its Ports (port 1 in PortState).
func onePort(want Sample) Sample {
	if want.Ports == nil && want.PortState != "" {
		want.Ports = []PortSample{{Number: 1, State: want.PortState}}
	}
	return want
}
