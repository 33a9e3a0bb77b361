package resolve

import (
	"slices"
	"testing"
)

func TestTiedWith(t *testing.T) {
	for _, c := range []struct {
		tied []string
		me   string
		want []string
	}{
		{tied: []string{"a", "b", "c"}, me: "b", want: []string{"a", "c"}},
		{tied: []string{"a", "b"}, me: "x", want: []string{"a", "b"}},
		{tied: []string{"a"}, me: "a", want: nil},
		{tied: nil, me: "a", want: nil},
	} {
		if got := (Arbitration{Tied: c.tied}).TiedWith(c.me); !slices.Equal(got, c.want) {
			t.Errorf("Tied %v, TiedWith(%q) = %v, want %v", c.tied, c.me, got, c.want)
		}
	}
}
