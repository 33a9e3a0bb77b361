package plan

import (
	"reflect"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestDiff(t *testing.T) {
	from := &tsv1.NodeTuning{IsolatedCPUs: "1-3", KernelArgs: []string{"nohz_full=1-3", "idle=poll"},
		Sysctls: map[string]string{"vm.stat_interval": "10"}}
	to := &tsv1.NodeTuning{IsolatedCPUs: "1-7", KernelArgs: []string{"nohz_full=1-3", "nosmt"},
		Sysctls: map[string]string{"vm.stat_interval": "10", "kernel.timer_migration": "0"}}
	want := []Change{
		{Setting: "isolatedCPUs", From: "1-3", To: "1-7"},
		{Setting: "sysctls.kernel.timer_migration", To: "0"},
		{Setting: "kernel argument", To: "nosmt"},
		{Setting: "kernel argument", From: "idle=poll"},
	}
	if got := Diff(from, to); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff =\n%v\nwant\n%v", got, want)
	}
	if got := Diff(to, to); len(got) != 0 {
		t.Errorf("Diff of equal tunings = %v, want none", got)
	}
}

func TestNeedsReboot(t *testing.T) {
	running := &tsv1.NodeFacts{KernelCmdline: "ro quiet nohz_full=1-3"}
	tests := []struct {
		name        string
		current     *tsv1.NodeTuning
		want        *tsv1.NodeTuning
		needsReboot bool
	}{
		{"wanted args already running", nil, &tsv1.NodeTuning{KernelArgs: []string{"nohz_full=1-3"}}, false},
		{"a new arg", nil, &tsv1.NodeTuning{KernelArgs: []string{"nohz_full=1-3", "nosmt"}}, true},
		{"an arg tickstack set must go", &tsv1.NodeTuning{KernelArgs: []string{"nohz_full=1-3"}}, &tsv1.NodeTuning{}, true},
		{"an arg dropped that never took effect", &tsv1.NodeTuning{KernelArgs: []string{"nosmt"}}, &tsv1.NodeTuning{}, false},
	}
	for _, tt := range tests {
		if got := needsReboot(tt.current, tt.want, running); got != tt.needsReboot {
			t.Errorf("%s: needsReboot = %v, want %v", tt.name, got, tt.needsReboot)
		}
	}
}
