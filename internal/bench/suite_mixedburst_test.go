package bench

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The playback file holds paper 003's pattern: the steady rate in even seconds, steady + burst in
// odd ones, two small messages for each large one, timestamps increasing.
func TestWritePlayback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pb.csv")
	n, err := WritePlayback(path, tsv1.MixedBurstPattern{SteadyMps: 300, BurstMps: 150}, 4, 100, 600)
	if err != nil {
		t.Fatal(err)
	}
	if n != 300+450+300+450 {
		t.Fatalf("%d messages, want 1500", n)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	perSecond := map[int]int{}
	sizes := map[string]int{}
	last := -1.0
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		ts, size, ok := strings.Cut(sc.Text(), ", ")
		if !ok {
			t.Fatalf("line %q is not \"time, size\"", sc.Text())
		}
		v, err := strconv.ParseFloat(ts, 64)
		if err != nil || v <= last {
			t.Fatalf("timestamp %q not increasing after %v", ts, last)
		}
		last = v
		perSecond[int(v-1.0+1e-9)]++
		sizes[size]++
		lines++
	}
	if lines != int(n) {
		t.Fatalf("%d lines, WritePlayback said %d", lines, n)
	}
	if !reflect.DeepEqual(perSecond, map[int]int{0: 300, 1: 450, 2: 300, 3: 450}) {
		t.Errorf("messages per second %v", perSecond)
	}
	if sizes["100"] != 1000 || sizes["600"] != 500 {
		t.Errorf("sizes %v, want 2/3 at 100 B and 1/3 at 600 B", sizes)
	}
}
