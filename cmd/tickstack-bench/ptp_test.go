package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestPTPFlags(t *testing.T) {
	specOf := func(args ...string) (tsv1.BenchmarkSuites, error) {
		t.Helper()
		o, fs, err := parseFlags(append([]string{"--role=client"}, args...), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", args, err)
		}
		return buildSpec(o, fs)
	}
	spec, err := specOf("--suites=ptp", "--ptp-socket=/run/x/ptp4l.sock", "--ptp-interval=250ms", "--ptp-domain=0", "--ptp-duration=5")
	if err != nil {
		t.Fatal(err)
	}
	if p := spec.PTP; p == nil || p.Socket != "/run/x/ptp4l.sock" || p.IntervalMillis != 250 || p.Domain == nil || *p.Domain != 0 || p.DurationSeconds != 5 || spec.NetworkSuites() {
		t.Errorf("ptp spec %+v, want the flags' socket, 250 ms, domain 0 (explicit), 5 s and no reflector", spec.PTP)
	}
	// Unset flags leave the defaults, the domain to ptp4l.conf.
	spec, err = specOf("--suites=jitter,ptp", "--jitter-cpus=0")
	if err != nil {
		t.Fatal(err)
	}
	if d := spec.Defaulted().PTP; d.Socket != tsv1.DefaultPTPSocket || d.IntervalMillis != 1000 || d.Domain != nil || spec.Jitter == nil {
		t.Errorf("defaulted ptp spec %+v, want the agent's socket, 1 s and the domain unset", d)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--suites=ptp", "--ptp-interval=10ms"}, "ptp.intervalMillis: 10 out of range: use 100..60000"},
		{[]string{"--suites=ptp", "--ptp-interval=1500us"}, "--ptp-interval 1.5ms: give whole milliseconds"},
		{[]string{"--suites=ptp", "--ptp-domain=200"}, "ptp.domain: 200 out of range"},
		{[]string{"--suites=ptp", "--ptp-domain=-1"}, "ptp.domain: -1 out of range"},
		{[]string{"--suites=ptp", "--ptp-socket=ptp4l.sock"}, `ptp.socket: "ptp4l.sock" is not a clean absolute path`},
		{[]string{"--spec=x.json", "--ptp-socket=/s"}, "--ptp-socket and --spec both given"},
	} {
		if _, err := specOf(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error containing %q", c.args, err, c.want)
		}
	}
}

// TestJitterCPUsPod: a spec's jitter.cpus "pod" measures the container's CPUs, given by --cpus.
func TestJitterCPUsPod(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(file, []byte(`{"jitter":{"cpus":"`+tsv1.JitterCPUsPod+`"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	specOf := func(args ...string) (tsv1.BenchmarkSuites, error) {
		t.Helper()
		o, fs, err := parseFlags(append([]string{"--role=client", "--spec=" + file}, args...), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", args, err)
		}
		return buildSpec(o, fs)
	}
	spec, err := specOf("--cpus=3")
	if err != nil || spec.Jitter == nil || spec.Jitter.CPUs != "3" {
		t.Fatalf("spec %+v, %v: want jitter.cpus 3 from --cpus", spec.Jitter, err)
	}
	if _, err := specOf(); err == nil || !strings.Contains(err.Error(), "pass them with --cpus") {
		t.Fatalf("without --cpus: %v, want an error naming --cpus", err)
	}
}
