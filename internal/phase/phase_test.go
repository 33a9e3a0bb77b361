package phase

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestRun(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		results []error
		ran     []int
		err     error
	}{
		{"all run", []error{nil, nil, nil}, []int{0, 1, 2}, nil},
		{"stop ends without an error", []error{nil, ErrStop, nil}, []int{0, 1}, nil},
		{"a wrapped stop is a stop", []error{fmt.Errorf("invalid spec: %w", ErrStop), nil}, []int{0}, nil},
		{"an error ends and is returned", []error{boom, nil}, []int{0}, boom},
		{"no phases", nil, nil, nil},
	} {
		var ran []int
		var phases []Func[*[]int]
		for i, res := range tc.results {
			phases = append(phases, func(_ context.Context, s *[]int) error {
				*s = append(*s, i)
				return res
			})
		}
		err := Run(context.Background(), &ran, phases...)
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) || !slices.Equal(ran, tc.ran) {
			t.Errorf("%s: ran %v, err %v; want %v, %v", tc.name, ran, err, tc.ran, tc.err)
		}
	}
}
