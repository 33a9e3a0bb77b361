package bench

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sockperf's full log is not on a clock the runner can read directly. In its default mode
// sockperf takes times from the CPU's counter (RDTSC; CNTVCT_EL0 on arm64) and writes a time as
// ticks2nsec(counter - BASE_TICKS), where BASE_TICKS is the counter read during its static
// initialisation (after a 100 ms calibration sleep) and ticks2nsec divides by its own
// calibrated TICKS_PER_MSEC (sockperf's ticks.h and ticks.cpp). Its --no-rdtsc mode would write
// CLOCK_MONOTONIC, but sockperf 3.7 then misreads its constant durations (warm-up, cool-down,
// message pacing are computed in counter ticks at start-up and read as nanoseconds), so the
// runner keeps the default and reads the two variables from the process instead: they are in
// the executable's dynamic symbol table, at the load address /proc/<pid>/maps shows, in
// /proc/<pid>/mem. The runner reads the counter itself next to CLOCK_MONOTONIC, once when the
// variables are set and once at the end, which gives the counter's true rate over the run.

const (
	sockperfBaseSymbol = "_ZN14TicksImplRdtsc10BASE_TICKSE"
	sockperfRateSymbol = "_ZN14TicksImplRdtsc14TICKS_PER_MSECE"
	// clockSearchLimit: after this long without finding the variables the runner gives up.
	clockSearchLimit = 10 * time.Second
)

// clockPair is the counter and CLOCK_MONOTONIC read together.
type clockPair struct{ tsc, mono int64 }

// readClockPair reads the counter between two CLOCK_MONOTONIC readings, five times, and keeps the
// tightest.
func readClockPair() clockPair {
	best, width := clockPair{}, int64(math.MaxInt64)
	for range 5 {
		a := monoNow()
		t := int64(readTSC())
		b := monoNow()
		if b-a < width {
			best, width = clockPair{tsc: t, mono: a + (b-a)/2}, b-a
		}
	}
	return best
}

// sockperfClock places times of one sockperf process's full log on CLOCK_MONOTONIC.
type sockperfClock struct {
	// Base and TicksPerMsec are sockperf's BASE_TICKS and TICKS_PER_MSEC.
	Base, TicksPerMsec int64
	// First and Last are the runner's readings of the counter and CLOCK_MONOTONIC.
	First, Last clockPair
}

// ToMono returns the CLOCK_MONOTONIC time of a full-log time: back to sockperf's counter value
// with its own conversion, then to CLOCK_MONOTONIC with the counter's rate between the runner's
// two readings (sockperf's rate when they are too close).
func (c *sockperfClock) ToMono(logNs int64) int64 {
	const nsPerMs = int64(time.Millisecond)
	tsc := c.Base + logNs/nsPerMs*c.TicksPerMsec + (logNs%nsPerMs)*c.TicksPerMsec/nsPerMs
	d := tsc - c.First.tsc
	if dt := c.Last.tsc - c.First.tsc; dt > c.TicksPerMsec*100 {
		return c.First.mono + int64(math.Round(float64(d)*float64(c.Last.mono-c.First.mono)/float64(dt)))
	}
	return c.First.mono + int64(math.Round(float64(d)*float64(nsPerMs)/float64(c.TicksPerMsec)))
}

// clockFinder looks for a sockperf process's clock variables while the sampler runs.
type clockFinder struct {
	proc string
	pid  int
	done bool
	// exe is the executable last looked at; addrs its variables' addresses (nil: it has none).
	exe   string
	addrs []uint64
	start time.Time
	clock *sockperfClock
	err   error
}

// try looks once; it stops once it found the variables set or gave up.
func (c *clockFinder) try() {
	if c.done {
		return
	}
	if !haveTSC {
		c.done, c.err = true, errors.New("the runner cannot read the CPU counter sockperf's times come from on this architecture")
		return
	}
	if c.start.IsZero() {
		c.start = time.Now()
	}
	if time.Since(c.start) > clockSearchLimit {
		c.done = true
		if c.err == nil {
			c.err = fmt.Errorf("sockperf's clock variables were not set within %s", clockSearchLimit)
		}
		return
	}
	dir := filepath.Join(c.proc, strconv.Itoa(c.pid))
	exe, err := os.Readlink(filepath.Join(dir, "exe"))
	if err != nil {
		c.done, c.err = true, fmt.Errorf("reading the process's executable: %w", err)
		return
	}
	if exe != c.exe {
		// taskset and the bypass launcher exec sockperf in the same process
		c.exe = exe
		if c.addrs, c.err = sockperfClockAddrs(dir, exe); c.err != nil {
			c.done = true
			return
		}
	}
	if c.addrs == nil {
		return
	}
	v, err := readProcWords(dir, c.addrs)
	if err != nil {
		c.done, c.err = true, err
		return
	}
	if v[0] == 0 || v[1] <= 0 {
		return // static initialisation not done yet
	}
	c.clock = &sockperfClock{Base: v[0], TicksPerMsec: v[1], First: readClockPair()}
	c.done = true
}

// finish records the clock (with the closing reading) or why there is none.
func (c *clockFinder) finish(tr *schedTrace) {
	if c.clock != nil {
		c.clock.Last = readClockPair()
		tr.Clock = c.clock
		return
	}
	if c.done && c.err == nil {
		return
	}
	if c.err == nil {
		c.err = errors.New("the process ended before sockperf's clock variables were set")
	}
	tr.ClockErr = "placing sockperf's full log on CLOCK_MONOTONIC: " + c.err.Error()
}

// sockperfClockAddrs returns the addresses of sockperf's BASE_TICKS and TICKS_PER_MSEC in the
// process (dir is its /proc directory, exe its executable's path); nil without an error for an
// executable without them (taskset, the launcher's shell).
func sockperfClockAddrs(dir, exe string) ([]uint64, error) {
	f, err := elf.Open(filepath.Join(dir, "exe"))
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	if now, err := os.Readlink(filepath.Join(dir, "exe")); err != nil || now != exe {
		return nil, nil // it exec'd meanwhile: look again at the next sample
	}
	syms, _ := f.DynamicSymbols()
	if more, err := f.Symbols(); err == nil {
		syms = append(syms, more...)
	}
	var base, rate uint64
	for _, s := range syms {
		switch s.Name {
		case sockperfBaseSymbol:
			base = s.Value
		case sockperfRateSymbol:
			rate = s.Value
		}
	}
	if base == 0 || rate == 0 {
		if strings.Contains(filepath.Base(exe), "sockperf") {
			return nil, fmt.Errorf("%s has no symbols %s and %s (a sockperf other than 3.x?)", exe, sockperfBaseSymbol, sockperfRateSymbol)
		}
		return nil, nil
	}
	if f.Type != elf.ET_DYN {
		return []uint64{base, rate}, nil
	}
	// A position-independent executable: add where its first segment was loaded.
	first := uint64(math.MaxUint64)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Vaddr < first {
			first = p.Vaddr &^ 0xfff
		}
	}
	load, err := loadAddress(filepath.Join(dir, "maps"), exe)
	if err != nil {
		return nil, err
	}
	bias := load - first
	return []uint64{bias + base, bias + rate}, nil
}

// loadAddress is the start of the mapping of exe at file offset 0 in a /proc/<pid>/maps.
func loadAddress(maps, exe string) (uint64, error) {
	f, err := os.Open(maps)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Trim(fields[2], "0") != "" {
			continue
		}
		lo, _, _ := strings.Cut(fields[0], "-")
		return strconv.ParseUint(lo, 16, 64)
	}
	return 0, fmt.Errorf("%s does not map %s at offset 0", maps, exe)
}

// readProcWords reads 64-bit words at addrs from the process's memory.
func readProcWords(dir string, addrs []uint64) ([]int64, error) {
	f, err := os.Open(filepath.Join(dir, "mem"))
	if err != nil {
		return nil, fmt.Errorf("reading sockperf's clock variables: %w", err)
	}
	defer f.Close()
	out := make([]int64, len(addrs))
	var b [8]byte
	for i, a := range addrs {
		if _, err := f.ReadAt(b[:], int64(a)); err != nil {
			return nil, fmt.Errorf("reading sockperf's clock variables: %w", err)
		}
		out[i] = int64(binary.NativeEndian.Uint64(b[:]))
	}
	return out, nil
}
