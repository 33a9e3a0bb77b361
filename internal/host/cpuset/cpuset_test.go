package cpuset

import (
	"slices"
	"strings"
	"testing"
)

// parseCase parses in with parse (named name) and says whether the case goes on to compare what it
// got: a case that wants an error fails unless parsing fails, another unless parsing succeeds.
func parseCase(t *testing.T, name string, parse func(string) (Set, error), in string, wantErr bool) (Set, bool) {
	t.Helper()
	got, err := parse(in)
	if wantErr {
		if err == nil {
			t.Errorf("%s(%.40q) = %v, want error", name, in, got)
		}
		return got, false
	}
	if err != nil {
		t.Errorf("%s(%.40q): %v", name, in, err)
		return got, false
	}
	return got, true
}

func TestParseList(t *testing.T) {
	cases := []struct {
		in      string
		want    []int
		str     string
		wantErr bool
	}{
		{in: "", want: nil, str: ""},
		{in: "0", want: []int{0}, str: "0"},
		{in: "0-3", want: []int{0, 1, 2, 3}, str: "0-3"},
		{in: "3,1,2", want: []int{1, 2, 3}, str: "1-3"},
		{in: " 0-1 , 4,6-7\n", want: []int{0, 1, 4, 6, 7}, str: "0-1,4,6-7"},
		{in: "0-7:2", want: []int{0, 2, 4, 6}, str: "0,2,4,6"},
		{in: "2,2,2", want: []int{2}, str: "2"},
		{in: "5-3", wantErr: true},
		{in: "a", wantErr: true},
		{in: "1,,2", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "3:2", wantErr: true},
		{in: "0-3:0", wantErr: true},
		{in: "99999", wantErr: true},
	}
	for _, c := range cases {
		got, ok := parseCase(t, "Parse", Parse, c.in, c.wantErr)
		if !ok {
			continue
		}
		if !slices.Equal(got.CPUs(), c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.in, got.CPUs(), c.want)
		}
		if got.String() != c.str {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got.String(), c.str)
		}
	}
}

func TestMask(t *testing.T) {
	cases := []struct {
		list string
		mask string
	}{
		{"", "0"},
		{"0", "1"},
		{"0-1", "3"},
		{"0-3", "f"},
		{"4", "10"},
		{"0-31", "ffffffff"},
		{"32", "1,00000000"},
		{"0,33", "2,00000001"},
		{"0-63", "ffffffff,ffffffff"},
		{"1,64", "1,00000000,00000002"},
	}
	for _, c := range cases {
		s := MustParse(c.list)
		if got := s.Mask(); got != c.mask {
			t.Errorf("%q.Mask() = %q, want %q", c.list, got, c.mask)
		}
		back, err := ParseMask(c.mask)
		if err != nil {
			t.Errorf("ParseMask(%q): %v", c.mask, err)
			continue
		}
		if !back.Equal(s) {
			t.Errorf("ParseMask(%q) = %q, want %q", c.mask, back, c.list)
		}
	}
}

func TestParseMaskForms(t *testing.T) {
	cases := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "00000000,00000003", want: "0-1"},
		{in: "0x3", want: "0-1"},
		{in: "3\n", want: "0-1"},
		{in: "0", want: ""},
		{in: "", want: ""},
		{in: "00000000,00000000", want: ""},
		{in: "zz", wantErr: true},
		{in: "1" + strings.Repeat("0", 2100), wantErr: true},
	}
	for _, c := range cases {
		got, ok := parseCase(t, "ParseMask", ParseMask, c.in, c.wantErr)
		if !ok {
			continue
		}
		if got.String() != c.want {
			t.Errorf("ParseMask(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSetOps(t *testing.T) {
	a, b := MustParse("0-5"), MustParse("4-7")
	if got := a.Union(b).String(); got != "0-7" {
		t.Errorf("union = %q", got)
	}
	if got := a.Intersection(b).String(); got != "4-5" {
		t.Errorf("intersection = %q", got)
	}
	if got := a.Difference(b).String(); got != "0-3" {
		t.Errorf("difference = %q", got)
	}
	if !MustParse("1-2").IsSubsetOf(a) || b.IsSubsetOf(a) {
		t.Errorf("IsSubsetOf wrong")
	}
	if !a.Contains(5) || a.Contains(6) || a.Len() != 6 || (Set{}).Len() != 0 || !(Set{}).IsEmpty() {
		t.Errorf("Contains/Len wrong")
	}
	if Range(2, 4).String() != "2-4" {
		t.Errorf("Range wrong")
	}
}
