package ptp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PortState is a PTP port state as ptp4l names it.
type PortState string

// Port states (IEEE 1588 portState, ptp4l spelling).
const (
	PortStateUnknown      PortState = ""
	PortStateInitializing PortState = "INITIALIZING"
	PortStateFaulty       PortState = "FAULTY"
	PortStateDisabled     PortState = "DISABLED"
	PortStateListening    PortState = "LISTENING"
	PortStatePreMaster    PortState = "PRE_MASTER"
	PortStateMaster       PortState = "MASTER"
	PortStatePassive      PortState = "PASSIVE"
	PortStateUncalibrated PortState = "UNCALIBRATED"
	PortStateSlave        PortState = "SLAVE"
	PortStateGrandMaster  PortState = "GRAND_MASTER"
)

// PortStates lists every known port state, in IEEE 1588 order.
func PortStates() []PortState {
	return []PortState{PortStateInitializing, PortStateFaulty, PortStateDisabled, PortStateListening,
		PortStatePreMaster, PortStateMaster, PortStatePassive, PortStateUncalibrated, PortStateSlave,
		PortStateGrandMaster}
}

// Sample is one reading of ptp4l's state.
type Sample struct {
	// PortState is the clock's state: SLAVE when one of its ports is (a boundary clock's port
	// towards its master), else the first port's.
	PortState PortState
	// Ports are the states of every port ptp4l reported, by port number (1, 2, ... in the
	// configuration's order).
	Ports []PortSample
	// OffsetNs is offsetFromMaster in nanoseconds, valid when HasOffset.
	OffsetNs int64
	// HasOffset says whether an offset was read.
	HasOffset bool
	// MeanPathDelayNs is the measured one-way path delay to the master in nanoseconds.
	MeanPathDelayNs int64
	// StepsRemoved is the number of links between this clock and the grandmaster.
	StepsRemoved int
	// SystemOffsetNs is the system clock's (CLOCK_REALTIME) offset in nanoseconds, valid when
	// HasSystemOffset: phc2sys's offset from the NIC's clock with hardware time stamping, ptp4l's
	// offset from the master with software time stamping (ptp4l steers the system clock then).
	SystemOffsetNs int64
	// HasSystemOffset says whether a system clock offset was read.
	HasSystemOffset bool
	// ClockConflicts lists, comma-separated, the other daemons found steering the system clock
	// ("chronyd (pid 812)"), FindClockConflicts; empty when none.
	ClockConflicts string
	// Err is set when reading failed (ptp4l not running or not answering); the fields above are then
	// empty.
	Err error
}

// PortSample is one port's state.
type PortSample struct {
	// Number is ptp4l's port number (its configuration's sections, from 1).
	Number int
	// State is the port's state.
	State PortState
}

// clockState is the state a clock with these ports is in: SLAVE when any port is, else the
// first port's.
func clockState(ports []PortSample) PortState {
	for _, p := range ports {
		if p.State == PortStateSlave {
			return PortStateSlave
		}
	}
	if len(ports) == 0 {
		return PortStateUnknown
	}
	return ports[0].State
}

// Reader reads ptp4l's current state.
type Reader interface {
	Read(ctx context.Context) Sample
}

// PMC reads ptp4l's state by running pmc over ptp4l's UNIX management socket:
// pmc -u -b 0 -d DOMAIN -s SOCKET 'GET PORT_DATA_SET' 'GET CURRENT_DATA_SET'.
type PMC struct {
	// Path is the pmc executable.
	Path string
	// UDSAddress is ptp4l's management socket (its uds_address).
	UDSAddress string
	// Domain must be ptp4l's domainNumber: ptp4l ignores management messages of other domains.
	Domain int
	// LocalAddress, if set, is where pmc binds its own reply socket (pmc -i; default
	// /var/run/pmc.PID). ptp4l answers to that path resolved in its own mount namespace, so a pmc
	// in another one (a pod) must bind inside a directory both share.
	LocalAddress string
	// Timeout bounds one pmc run (default 2s).
	Timeout time.Duration
	// Attempts is how many times an incomplete answer is retried (default 3).
	Attempts int
}

// Args is pmc's command line.
func (p PMC) Args() []string {
	args := []string{"-u", "-b", "0", "-d", strconv.Itoa(p.Domain), "-s", p.UDSAddress}
	if p.LocalAddress != "" {
		args = append(args, "-i", p.LocalAddress)
	}
	return append(args, "GET PORT_DATA_SET", "GET CURRENT_DATA_SET")
}

// Read runs pmc and parses its answer. pmc waits only 100 ms for answers, which a busy machine can
// miss: an answer lacking a data set is retried up to Attempts times before it counts.
func (p PMC) Read(ctx context.Context) Sample {
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	var s Sample
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return s
			case <-time.After(50 * time.Millisecond):
			}
		}
		s = p.readOnce(ctx)
		if s.Err == nil && s.HasOffset {
			return s
		}
	}
	return s
}

func (p PMC) readOnce(ctx context.Context) Sample {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, p.Path, p.Args()...).CombinedOutput()
	if p.LocalAddress != "" && ctx.Err() != nil {
		// The context killed pmc (SIGKILL) before it could unlink its reply socket: nobody else will.
		_ = os.Remove(p.LocalAddress)
	}
	if err != nil {
		return Sample{Err: fmt.Errorf("running pmc against %s: %w: %s", p.UDSAddress, err, strings.TrimSpace(string(out)))}
	}
	s, err := ParsePMC(string(out))
	if err != nil {
		return Sample{Err: fmt.Errorf("reading ptp4l's state through %s (domain %d): %w", p.UDSAddress, p.Domain, err)}
	}
	return s
}

// ErrNoResponse means pmc got no answer: ptp4l is not running, or listens on another socket or
// domain.
var ErrNoResponse = errors.New("no response from ptp4l")

// ParsePMC parses pmc's output for GET PORT_DATA_SET and GET CURRENT_DATA_SET. With several ports
// (a boundary clock), each answers PORT_DATA_SET: Ports has them all, PortState says SLAVE when one
// of them is.
func ParsePMC(out string) (Sample, error) {
	var (
		s                    Sample
		section              string
		gotPort, gotCurrent  bool
		offsetText, pathText string
		port                 int
	)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.Contains(line, "RESPONSE MANAGEMENT") {
			f := strings.Fields(line)
			section = f[len(f)-1]
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		switch {
		case section == "PORT_DATA_SET" && f[0] == "portIdentity":
			port = 0
			if i := strings.LastIndexByte(f[1], '-'); i >= 0 {
				port, _ = strconv.Atoi(f[1][i+1:])
			}
		case section == "PORT_DATA_SET" && f[0] == "portState":
			if port == 0 {
				port = len(s.Ports) + 1
			}
			s.Ports = append(s.Ports, PortSample{Number: port, State: PortState(f[1])})
			gotPort, port = true, 0
		case section == "CURRENT_DATA_SET" && f[0] == "offsetFromMaster":
			offsetText, gotCurrent = f[1], true
		case section == "CURRENT_DATA_SET" && f[0] == "meanPathDelay":
			pathText = f[1]
		case section == "CURRENT_DATA_SET" && f[0] == "stepsRemoved":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return Sample{}, fmt.Errorf("parsing stepsRemoved %q: %w", f[1], err)
			}
			s.StepsRemoved = n
		}
	}
	if !gotPort && !gotCurrent {
		return Sample{}, ErrNoResponse
	}
	if !gotPort {
		return Sample{}, fmt.Errorf("%w to GET PORT_DATA_SET", ErrNoResponse)
	}
	slices.SortFunc(s.Ports, func(a, b PortSample) int { return a.Number - b.Number })
	s.PortState = clockState(s.Ports)
	if gotCurrent {
		v, err := parseNs(offsetText)
		if err != nil {
			return Sample{}, fmt.Errorf("parsing offsetFromMaster: %w", err)
		}
		s.OffsetNs, s.HasOffset = v, true
		if pathText != "" {
			if s.MeanPathDelayNs, err = parseNs(pathText); err != nil {
				return Sample{}, fmt.Errorf("parsing meanPathDelay: %w", err)
			}
		}
	}
	return s, nil
}

// parseNs parses pmc's nanosecond values ("116.0", "-12.5"), rounding to whole nanoseconds.
func parseNs(text string) (int64, error) {
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number: %w", text, err)
	}
	if math.IsNaN(v) || math.Abs(v) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is out of range", text)
	}
	return int64(math.Round(v)), nil
}

// LogParser follows ptp4l's output (-m) and keeps the latest port state and offset: the fallback when
// pmc cannot be used. Feed it lines with Line (Supervisor's OnLine) and call Reset when ptp4l
// restarts.
type LogParser struct {
	// MaxAge is how old the last offset line may be before Read reports an error (default 10s):
	// ptp4l prints one per sync, or one per summary_interval.
	MaxAge time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu         sync.Mutex
	ports      map[int]PortState
	offset     int64
	pathDelay  int64
	hasOffset  bool
	lastOffset time.Time
}

var (
	// ptp4l[315.536]: port 1: LISTENING to MASTER on ANNOUNCE_RECEIPT_TIMEOUT_EXPIRES
	// ptp4l[315.536]: port 1 (eth0): LISTENING to MASTER on ... (linuxptp 4)
	reStateChange = regexp.MustCompile(`\bport (\d+)(?: \([^)]*\))?: ([A-Z_]+) to ([A-Z_]+) on `)
	// ptp4l[339.690]: master offset        -12 s2 freq   +1234 path delay      5678
	reMasterOffset = regexp.MustCompile(`\bmaster offset\s+(-?\d+)\s+s\d+\s+freq\s+[-+]?\d+\s+path delay\s+(-?\d+)`)
	// ptp4l[339.690]: rms  774 max 1285 freq     +0 +/-   0 delay  2343 +/-   0
	reSummary = regexp.MustCompile(`\brms\s+(\d+)\s+max\s+(\d+)\s+freq\s+[-+]?\d+\s+\+/-\s+\d+(?:\s+delay\s+(-?\d+))?`)
)

// Line takes one line of ptp4l output.
func (p *LogParser) Line(line string) {
	if !strings.HasPrefix(line, "ptp4l") {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := reStateChange.FindStringSubmatch(line); m != nil {
		if n, _ := strconv.Atoi(m[1]); n != 0 { // port 0 is the UNIX management port
			if p.ports == nil {
				p.ports = map[int]PortState{}
			}
			p.ports[n] = PortState(m[3])
		}
		return
	}
	if m := reMasterOffset.FindStringSubmatch(line); m != nil {
		p.offset, _ = strconv.ParseInt(m[1], 10, 64)
		p.pathDelay, _ = strconv.ParseInt(m[2], 10, 64)
		p.hasOffset, p.lastOffset = true, p.now()
		return
	}
	if m := reSummary.FindStringSubmatch(line); m != nil {
		// A summary has no signed offset: take the largest magnitude in the interval, which is what
		// a threshold must see.
		p.offset, _ = strconv.ParseInt(m[2], 10, 64)
		if m[3] != "" {
			p.pathDelay, _ = strconv.ParseInt(m[3], 10, 64)
		}
		p.hasOffset, p.lastOffset = true, p.now()
	}
}

// Reset forgets everything seen, for a restarted ptp4l.
func (p *LogParser) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ports, p.offset, p.pathDelay, p.hasOffset, p.lastOffset = nil, 0, 0, false, time.Time{}
}

// Read returns the state seen so far. The offset is left out when older than MaxAge.
func (p *LogParser) Read(context.Context) Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ports) == 0 {
		return Sample{Err: errors.New("ptp4l has not reported a port state in its output yet")}
	}
	var s Sample
	for _, n := range slices.Sorted(maps.Keys(p.ports)) {
		s.Ports = append(s.Ports, PortSample{Number: n, State: p.ports[n]})
	}
	s.PortState = clockState(s.Ports)
	maxAge := p.MaxAge
	if maxAge <= 0 {
		maxAge = 10 * time.Second
	}
	if p.hasOffset && p.now().Sub(p.lastOffset) <= maxAge {
		s.OffsetNs, s.MeanPathDelayNs, s.HasOffset = p.offset, p.pathDelay, true
	}
	return s
}

func (p *LogParser) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
