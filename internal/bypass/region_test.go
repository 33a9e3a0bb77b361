package bypass

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tickstack/tickstack/internal/testutil"
)

// layoutProgram prints, for the header's version, every member of the five structures the reader
// mirrors with its offset and size ("struct member offset size"), the counters through the
// header's own X-macro lists, so a counter added there shows here.
const layoutProgram = `#include <stddef.h>
#include <stdio.h>
#include "tickstack.h"

struct tcp_part { TICKSTACK_TCP_COUNTERS(TICKSTACK_DECLARE_U64) };
struct nh_part { TICKSTACK_NH_COUNTERS(TICKSTACK_DECLARE_U64) };
struct tcp_ext_part { TICKSTACK_TCP_EXT_COUNTERS(TICKSTACK_DECLARE_U64) };
#define M(s, m) printf("%s %s %zu %zu\n", #s, #m, offsetof(struct s, m), sizeof(((struct s *)0)->m));
#define XSK(n) M(tickstack_xsk_stats, n)
#define SOCK(n) M(tickstack_sock_stats, n)
#define TCP(n) M(tcp_part, n)
#define NH(n) M(nh_part, n)
#define XB(n) M(tickstack_xsk_ext, n)
#define TE(n) M(tcp_ext_part, n)

int main(void)
{
	printf("version %u %u %u %u\n", TICKSTACK_STATS_VERSION, TICKSTACK_STATS_MAGIC, TICKSTACK_STATS_MAX_XSK, TICKSTACK_STATS_MAX_SOCK);
	printf("size %zu %zu %zu %zu %zu %zu %zu\n", sizeof(struct tickstack_stats), sizeof(struct tickstack_xsk_stats),
	       sizeof(struct tickstack_sock_stats), sizeof(struct tcp_part), sizeof(struct nh_part),
	       sizeof(struct tickstack_xsk_ext), sizeof(struct tcp_ext_part));
	M(tickstack_stats, magic) M(tickstack_stats, version) M(tickstack_stats, pid) M(tickstack_stats, nxsk)
	M(tickstack_stats, profile) M(tickstack_stats, sockets_accelerated) M(tickstack_stats, sockets_kernel)
	M(tickstack_stats, fallback_events) M(tickstack_stats, kernel_option) M(tickstack_stats, kernel_uring)
	M(tickstack_stats, kernel_shared) M(tickstack_stats, xsk) M(tickstack_stats, sock) M(tickstack_stats, tcp)
	M(tickstack_stats, nh) M(tickstack_stats, cap_req) M(tickstack_stats, cap_att) M(tickstack_stats, dump_req)
	M(tickstack_stats, dump_done) M(tickstack_stats, xsk_ext) M(tickstack_stats, tcp_ext)
	M(tickstack_xsk_stats, ifname) M(tickstack_xsk_stats, ifindex) M(tickstack_xsk_stats, queue)
	M(tickstack_xsk_stats, in_use) M(tickstack_xsk_stats, mode) M(tickstack_xsk_stats, tx_csum_offload)
	M(tickstack_xsk_stats, zerocopy) M(tickstack_xsk_stats, nqueues) M(tickstack_xsk_stats, reserved)
	TICKSTACK_XSK_COUNTERS(XSK)
	M(tickstack_sock_stats, fd) M(tickstack_sock_stats, in_use) M(tickstack_sock_stats, accelerated)
	M(tickstack_sock_stats, laddr) M(tickstack_sock_stats, raddr) M(tickstack_sock_stats, lport)
	M(tickstack_sock_stats, rport)
	TICKSTACK_SOCK_COUNTERS(SOCK)
	TICKSTACK_TCP_COUNTERS(TCP)
	TICKSTACK_NH_COUNTERS(NH)
	TICKSTACK_XSK_EXT_COUNTERS(XB)
	TICKSTACK_TCP_EXT_COUNTERS(TE)
	return 0;
}
`

// TestLayoutMatchesTheHeader compiles layoutProgram with dataplane/include/tickstack.h and checks
// the Go types member by member (name, offset, size, order) and the version, magic and array
// bounds: a change of the header that this reader does not follow fails here.
func TestLayoutMatchesTheHeader(t *testing.T) {
	cc := testutil.RequireTool(t, "cc")
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "layout.c")
	if err := os.WriteFile(src, []byte(layoutProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "layout")
	if out, err := exec.Command(cc, "-Wall", "-Werror", "-I", filepath.Join(root, "dataplane", "include"), "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling the layout program: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	members := map[string][]string{} // C struct -> "name offset size", in order
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		switch f[0] {
		case "version":
			if v, _ := strconv.Atoi(f[1]); v < StatsVersion {
				t.Errorf("the header's version is %d, below the reader's %d", v, StatsVersion)
			}
			if want := []string{strconv.Itoa(StatsMagic), strconv.Itoa(MaxXSK), strconv.Itoa(MaxSock)}; !reflect.DeepEqual(f[2:], want) {
				t.Errorf("the header's magic, MAX_XSK, MAX_SOCK are %v, the reader's %v: the layout grows only at its end; follow the header in region.go", f[2:], want)
			}
		case "size":
			// struct tickstack_stats may have grown at its end (a later version); its parts may not.
			if n, _ := strconv.Atoi(f[1]); n < StatsSize {
				t.Errorf("sizeof(struct tickstack_stats) is %d, below the reader's %d", n, StatsSize)
			}
			want := []string{size(XSKStats{}), size(SockStats{}), size(TCPStats{}), size(NHStats{}), size(XSKExtStats{}), size(TCPExtStats{})}
			if !reflect.DeepEqual(f[2:], want) {
				t.Errorf("the header's sizes (xsk, sock, tcp, nh, xsk_ext, tcp_ext) are %v, the reader's %v: a counter added to an X-macro list moves every member after it; "+
					"the layout grows only at the end of struct tickstack_stats (then raise TICKSTACK_STATS_VERSION)", f[2:], want)
			}
		default:
			members[f[0]] = append(members[f[0]], strings.Join(f[1:], " "))
		}
	}
	for cName, goType := range map[string]reflect.Type{
		"tickstack_stats": reflect.TypeFor[Stats](), "tickstack_xsk_stats": reflect.TypeFor[XSKStats](),
		"tickstack_sock_stats": reflect.TypeFor[SockStats](), "tcp_part": reflect.TypeFor[TCPStats](), "nh_part": reflect.TypeFor[NHStats](),
		"tickstack_xsk_ext": reflect.TypeFor[XSKExtStats](), "tcp_ext_part": reflect.TypeFor[TCPExtStats](),
	} {
		var goMembers []string
		for i := range goType.NumField() {
			f := goType.Field(i)
			goMembers = append(goMembers, strconv.Itoa(int(f.Offset))+" "+strconv.Itoa(int(f.Type.Size())))
		}
		c := members[cName]
		if len(c) != len(goMembers) {
			t.Errorf("struct %s has %d members in the header, %s has %d", cName, len(c), goType.Name(), len(goMembers))
			continue
		}
		for i, m := range c {
			name, at, _ := strings.Cut(m, " ")
			goName := goType.Field(i).Name
			if strings.ReplaceAll(name, "_", "") != strings.ToLower(goName) || at != goMembers[i] {
				t.Errorf("struct %s member %d: %s at offset/size %s in the header, %s.%s at %s", cName, i, name, at, goType.Name(), goName, goMembers[i])
			}
		}
	}
}

func size(v any) string { return strconv.Itoa(int(reflect.TypeOf(v).Size())) }

func TestParseStatsRefusesWhatItCannotRead(t *testing.T) {
	good := make([]byte, StatsSize)
	binary.NativeEndian.PutUint32(good, StatsMagic)
	binary.NativeEndian.PutUint32(good[4:], StatsVersion)
	binary.NativeEndian.PutUint32(good[8:], 42)
	s, err := ParseStats(good)
	if err != nil || s.Pid != 42 {
		t.Fatalf("a good region: %+v, %v", s, err)
	}
	// a later version: the layout grown at its end, read by its prefix
	later := append(bytes.Clone(good), make([]byte, 64)...)
	binary.NativeEndian.PutUint32(later[4:], StatsVersion+1)
	if s, err := ParseStats(later); err != nil || s.Pid != 42 || s.Version != StatsVersion+1 {
		t.Errorf("a region of version %d: %+v, %v; want its prefix read", StatsVersion+1, s, err)
	}
	// version 6: the layout before XSKExt, read by it, the members of version 7 zero
	v6 := bytes.Clone(good[:statsSizeV6])
	binary.NativeEndian.PutUint32(v6[4:], 6)
	if s, err := ParseStats(v6); err != nil || s.Pid != 42 || s.HasV7() {
		t.Errorf("a region of version 6: %+v, %v; want it read, without version 7's members", s, err)
	}
	other := bytes.Clone(good)
	binary.NativeEndian.PutUint32(other[4:], MinStatsVersion-1)
	var ve *VersionError
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than the region's header"},
		{"no magic yet", make([]byte, StatsSize), "not (yet) a tickstack statistics region"},
		{"an earlier version", other, "layout version 5, this reader knows 6 and later"},
		{"truncated", good[:StatsSize-1], "truncated region"},
		{"truncated version 6", v6[:statsSizeV6-1], "truncated region"},
	} {
		_, err := ParseStats(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if c.name == "an earlier version" && !errors.As(err, &ve) {
			t.Errorf("an earlier version: %T, want a *VersionError", err)
		}
	}
}

func TestPodOfCgroup(t *testing.T) {
	const cid = "3f1e2d4c5b6a79880716253443526170a1b2c3d4e5f60718293a4b5c6d7e8f90"
	for _, c := range []struct{ path, uid, container string }{
		{"/kubepods/besteffort/pod0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a/" + cid, "0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a", cid},
		{"/kubepods/pod0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a/" + cid, "0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a", cid},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0e4c6b1a_5d2f_4c1e_9a3b_7f8e9d0c1b2a.slice/cri-containerd-" + cid + ".scope",
			"0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a", cid},
		{"/kubepods.slice/kubepods-pod0e4c6b1a_5d2f_4c1e_9a3b_7f8e9d0c1b2a.slice/crio-" + cid + ".scope", "0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a", cid},
		// a private cgroup namespace (the agent's) shows other pods' paths relative to its own
		{"/../../kubepods-besteffort-pod0e4c6b1a_5d2f_4c1e_9a3b_7f8e9d0c1b2a.slice/cri-containerd-" + cid + ".scope", "0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a", cid},
		{"/kubepods/besteffort/pod0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a", "0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a", ""},
		{"/user.slice/user-0.slice/session-1.scope", "", ""},
		{"/system.slice/podman.service", "", ""},
		{"/", "", ""},
	} {
		uid, container := PodOfCgroup(c.path)
		if uid != c.uid || container != c.container {
			t.Errorf("PodOfCgroup(%q) = %q, %q; want %q, %q", c.path, uid, container, c.uid, c.container)
		}
	}
}

func TestRegionOfAMapsLine(t *testing.T) {
	for line, want := range map[string]int{
		"7f1c2a000000-7f1c2a05b000 rw-s 00000000 00:1a 1234                       /dev/shm/tickstack-17\n":                              17,
		"7f1c2a000000-7f1c2a05b000 rw-s 00000000 00:1a 1234 /run/containerd/io.containerd.grpc.v1.cri/sandboxes/ab12/shm/tickstack-1\n": 1,
		"7f1c2a000000-7f1c2a05b000 rw-s 00000000 00:1a 1234 /dev/shm/tickstack-17 (deleted)\n":                                          0,
		"7f1c2a000000-7f1c2a05b000 rw-s 00000000 00:1a 1234 /tmp/tickstack-17\n":                                                        0,
		"7f1c2a000000-7f1c2a05b000 r-xp 00000000 08:01 99 /opt/tickstack/lib/libtickstack.so\n":                                         0,
		"7f1c2a000000-7f1c2a05b000 rw-s 00000000 00:1a 1234 /dev/shm/tickstack-x\n":                                                     0,
		"7f1c2a000000-7f1c2a05b000 rw-p 00000000 00:00 0\n":                                                                             0,
	} {
		n, ok := regionOf([]byte(line))
		if n != want || ok != (want != 0) {
			t.Errorf("regionOf(%q) = %d, %v; want %d", line, n, ok, want)
		}
	}
}
