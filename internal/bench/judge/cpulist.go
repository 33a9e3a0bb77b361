package judge

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ParseCPUList parses a Linux CPU list such as "1,3-5" into sorted, distinct CPU numbers.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty CPU list: give CPUs like \"2\" or \"2-3,6\"")
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number: give CPUs like \"2\" or \"2-3,6\"", s, part)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: %q is not a range low-high: give CPUs like \"2-3\"", s, part)
			}
		}
		if b > 4095 {
			return nil, fmt.Errorf("CPU list %q: CPU %d is beyond 4095", s, b)
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}
