package ptp

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SystemClockParser follows phc2sys's output (-m) and keeps its latest offset of the system clock
// (CLOCK_REALTIME, the clock applications, trade timestamps and MiFID II RTS 25 records read) from
// the NIC's clock it follows. phc2sys prints one line per update of each clock it steers:
//
//	phc2sys[1234.567]: CLOCK_REALTIME phc offset       -12 s2 freq   +3456 delay    789
//
// or, with a summary interval (-u), the largest offset in it:
//
//	phc2sys[1234.567]: CLOCK_REALTIME rms   12 max   34 freq  +3456 +/-   8 delay   789 +/-   1
//
// Lines for other clocks (a second NIC's clock in automatic mode) are ignored. Feed it lines with
// Line (Supervisor's OnLine) and call Reset when phc2sys restarts.
type SystemClockParser struct {
	// MaxAge is how old the last offset may be before Read reports none (default 10s).
	MaxAge time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu     sync.Mutex
	offset int64
	has    bool
	last   time.Time
}

var (
	reSysOffset  = regexp.MustCompile(`\bCLOCK_REALTIME \S+ offset\s+(-?\d+)\s+s\d+\s+freq\s+[-+]?\d+`)
	reSysSummary = regexp.MustCompile(`\bCLOCK_REALTIME rms\s+(\d+)\s+max\s+(\d+)\s+freq\s+[-+]?\d+`)
)

// Line takes one line of phc2sys output.
func (p *SystemClockParser) Line(line string) {
	if !strings.HasPrefix(line, "phc2sys") {
		return
	}
	var v int64
	if m := reSysOffset.FindStringSubmatch(line); m != nil {
		v, _ = strconv.ParseInt(m[1], 10, 64)
	} else if m := reSysSummary.FindStringSubmatch(line); m != nil {
		// No signed offset in a summary: its largest magnitude is what a threshold must see.
		v, _ = strconv.ParseInt(m[2], 10, 64)
	} else {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offset, p.has, p.last = v, true, p.now()
}

// Reset forgets the last offset, for a restarted phc2sys.
func (p *SystemClockParser) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offset, p.has, p.last = 0, false, time.Time{}
}

// Read returns the last system clock offset, unless none was seen or it is older than MaxAge (a
// phc2sys that stopped, hangs, or lost its source prints nothing).
func (p *SystemClockParser) Read() (offsetNs int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	maxAge := p.MaxAge
	if maxAge <= 0 {
		maxAge = 10 * time.Second
	}
	if !p.has || p.now().Sub(p.last) > maxAge {
		return 0, false
	}
	return p.offset, true
}

func (p *SystemClockParser) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
