package bootloader

import (
	"os"
	"slices"
	"testing"

	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/testutil"
)

func intp(i int) *int { return &i }

func TestBuild(t *testing.T) {
	cases := []struct {
		name    string
		p       Params
		want    []string
		wantErr string
	}{
		{name: "empty", p: Params{}, want: nil},
		{
			name: "isolation set",
			p: Params{
				IsolatedCPUs:    cpuset.MustParse("2-7"),
				NohzFullCPUs:    cpuset.MustParse("2-7"),
				RCUNoCBCPUs:     cpuset.MustParse("2-7"),
				IRQAffinityCPUs: cpuset.MustParse("0-1"),
			},
			want: []string{"isolcpus=managed_irq,domain,2-7", "nohz_full=2-7", "rcu_nocbs=2-7", "irqaffinity=0-1"},
		},
		{
			name: "explicit flags, idle and cstates",
			p:    Params{IsolatedCPUs: cpuset.MustParse("1,3"), IsolationFlags: []string{"domain"}, IdlePoll: true, NoSMT: true, MaxCState: intp(1)},
			want: []string{"isolcpus=domain,1,3", "idle=poll", "nosmt", "processor.max_cstate=1", "intel_idle.max_cstate=1"},
		},
		{
			name: "no flags",
			p:    Params{IsolatedCPUs: cpuset.MustParse("4"), IsolationFlags: []string{}},
			want: []string{"isolcpus=4"},
		},
		{
			name: "hugepages",
			p:    Params{DefaultHugepageSizeKB: 1048576, Hugepages: []HugepagePool{{SizeKB: 1048576, Count: 4}, {SizeKB: 2048, Count: 512}}},
			want: []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "hugepages=512"},
		},
		{name: "bad flag", p: Params{IsolatedCPUs: cpuset.New(1), IsolationFlags: []string{"bogus"}}, wantErr: "isolationFlags"},
		{name: "irqaffinity overlaps", p: Params{IsolatedCPUs: cpuset.MustParse("1-3"), IRQAffinityCPUs: cpuset.MustParse("0-1")}, wantErr: "irqAffinityCPUs: 1 overlaps"},
		{name: "bad cstate", p: Params{MaxCState: intp(-1)}, wantErr: "maxCState"},
		{name: "bad hugepage size", p: Params{Hugepages: []HugepagePool{{SizeKB: 3000, Count: 1}}}, wantErr: "hugepages[0].sizeKB"},
		{name: "duplicate pool", p: Params{Hugepages: []HugepagePool{{SizeKB: 2048, Count: 1}, {SizeKB: 2048, Count: 2}}}, wantErr: "hugepages[1]: size 2048 kB appears twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Build(c.p)
			if !testutil.WantError(t, "Build", err, c.wantErr) {
				return
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("Build = %q, want %q", got, c.want)
			}
		})
	}
}

func TestTokenize(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"quiet  splash\n", []string{"quiet", "splash"}},
		{`root=/dev/sda1 dyndbg="file foo.c +p" ro`, []string{"root=/dev/sda1", "dyndbg=file foo.c +p", "ro"}},
		{"a=1 -- --init-flag b", []string{"a=1"}},
	}
	for _, c := range cases {
		if got := Tokenize(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	desired := []string{"isolcpus=managed_irq,domain,2-3", "nohz_full=2-3", "idle=poll", "hugepages=16", "hugepagesz=1G", "hugepages=4"}
	cases := []struct {
		name        string
		cmdline     string
		wantMissing []string
	}{
		{
			name:        "all in effect, extra args ignored",
			cmdline:     "BOOT_IMAGE=/vmlinuz quiet isolcpus=managed_irq,domain,2-3 nohz_full=2-3 idle=poll hugepages=16 hugepagesz=1G hugepages=4",
			wantMissing: nil,
		},
		{
			name:        "nothing in effect",
			cmdline:     "quiet",
			wantMissing: []string{"isolcpus=managed_irq,domain,2-3", "nohz_full=2-3", "idle=poll", "hugepages=16", "hugepagesz=1G hugepages=4"},
		},
		{
			name:        "last occurrence wins",
			cmdline:     "nohz_full=2-3 nohz_full=3 isolcpus=managed_irq,domain,2-3 idle=poll hugepages=16 hugepagesz=1G hugepages=4",
			wantMissing: []string{"nohz_full=2-3"},
		},
		{
			name:        "wrong pool size count",
			cmdline:     "isolcpus=managed_irq,domain,2-3 nohz_full=2-3 idle=poll hugepages=16 hugepagesz=1G hugepages=2",
			wantMissing: []string{"hugepagesz=1G hugepages=4"},
		},
		{
			name:        "args after -- are init's",
			cmdline:     "isolcpus=managed_irq,domain,2-3 nohz_full=2-3 hugepages=16 hugepagesz=1G hugepages=4 -- idle=poll",
			wantMissing: []string{"idle=poll"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Compare(desired, c.cmdline)
			if !slices.Equal(d.Missing, c.wantMissing) {
				t.Fatalf("Missing = %q, want %q", d.Missing, c.wantMissing)
			}
			if d.InEffect() != (len(c.wantMissing) == 0) {
				t.Fatalf("InEffect = %v", d.InEffect())
			}
		})
	}
	d := Compare([]string{"nohz_full=2-3"}, "nohz_full=3")
	if d.Observed["nohz_full"] != "3" {
		t.Errorf("Observed = %v, want nohz_full=3", d.Observed)
	}
}

// TestCompareRealCmdline compares with this machine's /proc/cmdline: its own arguments are in
// effect, tuning arguments it did not boot with are reported missing.
func TestCompareRealCmdline(t *testing.T) {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	tokens := Tokenize(string(b))
	if len(tokens) == 0 {
		t.Fatal("empty /proc/cmdline")
	}
	if d := Compare(tokens, string(b)); !d.InEffect() {
		t.Fatalf("the running kernel's own arguments are reported missing: %q", d.Missing)
	}
	// An argument this kernel did not boot with: the first of these it lacks.
	absent := ""
	for _, a := range []string{"nohz_full=1", "nohz_full=2", "rcu_nocbs=1", "skew_tick=1", "tsc=reliable"} {
		if !slices.Contains(tokens, a) {
			absent = a
			break
		}
	}
	if absent == "" {
		t.Fatalf("the running kernel booted with every candidate argument: add one it lacks: %q", tokens)
	}
	d := Compare(append(tokens, absent), string(b))
	if !slices.Equal(d.Missing, []string{absent}) {
		t.Fatalf("Missing = %q, want [%s]", d.Missing, absent)
	}
}
