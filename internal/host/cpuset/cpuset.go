// Package cpuset parses and formats the two ways the kernel spells a set of CPUs: the list form
// ("0-3,8,10-11", used by isolcpus=, smp_affinity_list, cpulist files) and the hexadecimal mask form
// ("ff,0000000f", used by smp_affinity, rps_cpus, xps_cpus, the workqueue cpumask and
// default_smp_affinity: 32-bit words, most significant first, separated by commas).
package cpuset

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU bounds the CPU numbers Parse and ParseMask accept, so a typo cannot allocate a huge set.
const MaxCPU = 8191

// Set is an immutable, sorted set of CPU numbers. The zero value is the empty set.
type Set struct {
	cpus []int
}

// New returns the set holding cpus (duplicates are dropped).
func New(cpus ...int) Set {
	c := slices.Clone(cpus)
	slices.Sort(c)
	return Set{cpus: slices.Compact(c)}
}

// Range returns the set {lo..hi}.
func Range(lo, hi int) Set {
	var c []int
	for i := lo; i <= hi; i++ {
		c = append(c, i)
	}
	return Set{cpus: c}
}

// Parse reads the list form: comma-separated CPU numbers and ranges ("0-3,8"), optionally with a
// stride ("0-7:2" is 0,2,4,6, as the kernel accepts). Blanks around items are ignored; "" is empty.
func Parse(s string) (Set, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Set{}, nil
	}
	var out []int
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return Set{}, fmt.Errorf("cpu list %q: empty item (write e.g. \"0-3,8\")", s)
		}
		rng, strideStr, hasStride := strings.Cut(item, ":")
		loStr, hiStr, isRange := strings.Cut(rng, "-")
		lo, err := parseCPU(loStr)
		if err != nil {
			return Set{}, fmt.Errorf("cpu list %q: %w", s, err)
		}
		hi := lo
		if isRange {
			if hi, err = parseCPU(hiStr); err != nil {
				return Set{}, fmt.Errorf("cpu list %q: %w", s, err)
			}
			if hi < lo {
				return Set{}, fmt.Errorf("cpu list %q: range %q runs backwards (write %d-%d)", s, item, hi, lo)
			}
		}
		stride := 1
		if hasStride {
			if !isRange {
				return Set{}, fmt.Errorf("cpu list %q: stride %q needs a range (e.g. 0-7:2)", s, item)
			}
			stride, err = strconv.Atoi(strideStr)
			if err != nil || stride < 1 {
				return Set{}, fmt.Errorf("cpu list %q: stride %q must be a positive integer", s, strideStr)
			}
		}
		for c := lo; c <= hi; c += stride {
			out = append(out, c)
		}
	}
	return New(out...), nil
}

// MustParse is Parse for constants in tests and tables; it panics on a malformed list.
func MustParse(s string) Set {
	c, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return c
}

func parseCPU(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	if n > MaxCPU {
		return 0, fmt.Errorf("CPU %d is above the supported maximum %d", n, MaxCPU)
	}
	return n, nil
}

// ParseMask reads the hexadecimal mask form ("3", "00000000,00000003", "0x3"). Commas between
// 32-bit words and a 0x prefix are accepted; "" and "0" are the empty set.
func ParseMask(s string) (Set, error) {
	h := strings.TrimSpace(s)
	h = strings.TrimPrefix(strings.TrimPrefix(h, "0x"), "0X")
	h = strings.ReplaceAll(h, ",", "")
	if h == "" {
		return Set{}, nil
	}
	n, ok := new(big.Int).SetString(h, 16)
	if !ok {
		return Set{}, fmt.Errorf("cpu mask %q is not hexadecimal (write e.g. \"f\" or \"ff,ffffffff\")", s)
	}
	if n.BitLen() > MaxCPU+1 {
		return Set{}, fmt.Errorf("cpu mask %q names CPUs above the supported maximum %d", s, MaxCPU)
	}
	var out []int
	for i := 0; i < n.BitLen(); i++ {
		if n.Bit(i) == 1 {
			out = append(out, i)
		}
	}
	return Set{cpus: out}, nil
}

// CPUs returns the members in ascending order (a copy).
func (s Set) CPUs() []int { return slices.Clone(s.cpus) }

// Len is the number of CPUs in the set.
func (s Set) Len() int { return len(s.cpus) }

// IsEmpty reports whether the set has no CPU.
func (s Set) IsEmpty() bool { return len(s.cpus) == 0 }

// Contains reports whether cpu is in the set.
func (s Set) Contains(cpu int) bool {
	_, ok := slices.BinarySearch(s.cpus, cpu)
	return ok
}

// Equal reports whether both sets hold the same CPUs.
func (s Set) Equal(o Set) bool { return slices.Equal(s.cpus, o.cpus) }

// IsSubsetOf reports whether every CPU of s is in o.
func (s Set) IsSubsetOf(o Set) bool {
	for _, c := range s.cpus {
		if !o.Contains(c) {
			return false
		}
	}
	return true
}

// Union returns s ∪ o.
func (s Set) Union(o Set) Set { return New(append(slices.Clone(s.cpus), o.cpus...)...) }

// Intersection returns s ∩ o.
func (s Set) Intersection(o Set) Set {
	var out []int
	for _, c := range s.cpus {
		if o.Contains(c) {
			out = append(out, c)
		}
	}
	return Set{cpus: out}
}

// Difference returns s \ o.
func (s Set) Difference(o Set) Set {
	var out []int
	for _, c := range s.cpus {
		if !o.Contains(c) {
			out = append(out, c)
		}
	}
	return Set{cpus: out}
}

// String formats the list form with ranges collapsed ("0-3,8"); the empty set is "".
func (s Set) String() string {
	var b strings.Builder
	for i := 0; i < len(s.cpus); {
		j := i
		for j+1 < len(s.cpus) && s.cpus[j+1] == s.cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s.cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s.cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Mask formats the kernel's mask form: 32-bit words, most significant first, comma-separated, the
// first word without leading zeros and the others zero-padded to 8 digits ("3", "1,00000000").
// The empty set is "0".
func (s Set) Mask() string {
	if len(s.cpus) == 0 {
		return "0"
	}
	words := make([]uint32, s.cpus[len(s.cpus)-1]/32+1)
	for _, c := range s.cpus {
		words[c/32] |= 1 << (c % 32)
	}
	parts := make([]string, 0, len(words))
	for i := len(words) - 1; i >= 0; i-- {
		if i == len(words)-1 {
			parts = append(parts, strconv.FormatUint(uint64(words[i]), 16))
		} else {
			parts = append(parts, fmt.Sprintf("%08x", words[i]))
		}
	}
	return strings.Join(parts, ",")
}
