package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
)

// TestNICEncoding checks the ethtool netlink attributes for the groups a veth cannot exercise
// (rings, coalescing): a set request carries the header and exactly the given parameters with
// their types, and a reply decodes back to names.
func TestNICEncoding(t *testing.T) {
	b, err := encodeNICSet("eth0", Coalesce, map[string]uint32{"rx-usecs": 8, "adaptive-rx": 1})
	if err != nil {
		t.Fatal(err)
	}
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint16]string{}
	for ad.Next() {
		switch ad.Type() {
		case ethtoolAHeader:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					if nad.Type() == ethtoolAHeaderDevName {
						got[ad.Type()] = nad.String()
					}
				}
				return nil
			})
		case 11: // ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, u8
			if len(ad.Bytes()) != 1 {
				t.Errorf("adaptive-rx encoded in %d bytes, want 1 (u8)", len(ad.Bytes()))
			}
			got[11] = string(rune('0' + ad.Uint8()))
		case 2: // ETHTOOL_A_COALESCE_RX_USECS, u32
			if ad.Uint32() == 8 {
				got[2] = "8"
			}
		default:
			t.Errorf("unexpected attribute %d", ad.Type())
		}
	}
	if ad.Err() != nil || got[ethtoolAHeader] != "eth0" || got[11] != "1" || got[2] != "8" {
		t.Fatalf("decoded %v, err %v", got, ad.Err())
	}

	ae := netlink.NewAttributeEncoder()
	ae.Uint32(2, 4096) // ETHTOOL_A_RINGS_RX_MAX
	ae.Uint32(6, 512)  // ETHTOOL_A_RINGS_RX
	ae.Uint32(9, 256)  // ETHTOOL_A_RINGS_TX
	reply, _ := ae.Encode()
	m, err := decodeNICParams(nicSpecs[Rings], reply)
	if err != nil || m["max-rx"] != 4096 || m["rx"] != 512 || m["tx"] != 256 || len(m) != 3 {
		t.Fatalf("decoded rings %v, %v", m, err)
	}

	for _, bad := range []struct {
		group NICGroup
		p     map[string]uint32
		want  string
	}{
		{Rings, map[string]uint32{"max-rx": 1}, "unknown parameter \"max-rx\""},
		{Channels, map[string]uint32{"queues": 1}, "unknown parameter \"queues\""},
		{"bogus", nil, "use channels, rings or coalesce"},
	} {
		if _, err := encodeNICSet("eth0", bad.group, bad.p); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("encode %s %v: %v, want %q", bad.group, bad.p, err, bad.want)
		}
	}
	if names := NICParamNames(Rings); strings.Join(names, ",") != "rx,rx-jumbo,rx-mini,tx" {
		t.Errorf("ring parameter names %v", names)
	}
}

// TestTurboFiles covers both turbo interfaces on a host-root tree (this VM has neither).
func TestTurboFiles(t *testing.T) {
	for _, c := range []struct {
		file, on, off string
	}{
		{"/sys/devices/system/cpu/intel_pstate/no_turbo", "0", "1"},
		{"/sys/devices/system/cpu/cpufreq/boost", "1", "0"},
	} {
		h := &Host{Root: tempDir(t)}
		if _, err := h.Turbo(); err == nil {
			t.Fatal("turbo without any file")
		}
		p := h.Path(c.file)
		mustWrite(t, p, c.on)
		if on, err := h.Turbo(); err != nil || !on {
			t.Fatalf("%s=%s: on=%v err=%v", c.file, c.on, on, err)
		}
		if err := h.SetTurbo(false); err != nil {
			t.Fatal(err)
		}
		if v, _ := h.ReadFile(c.file); v != c.off {
			t.Fatalf("%s after SetTurbo(false) = %q, want %q", c.file, v, c.off)
		}
	}
}

func mustWrite(t *testing.T, p, v string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tempDir is hosttest.TempDir for this package's internal tests (hosttest imports host).
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", fmt.Sprintf("tsag%d-host-", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
