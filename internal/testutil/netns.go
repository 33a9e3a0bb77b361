package testutil

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// VethLink is two network namespaces joined by a veth pair, made by VethNamespaces.
type VethLink struct {
	// NSA and NSB are the namespaces; IfA and IfB their ends of the pair.
	NSA, NSB, IfA, IfB string
	// AddrA and AddrB are the ends' addresses (without the /24).
	AddrA, AddrB string
	// IP is the ip executable.
	IP string
}

// VethNamespaces creates the namespaces <prefix>a and <prefix>b joined by a veth pair <prefix>0a
// and <prefix>0b with <subnet>.1/24 and <subnet>.2/24 (subnet: three octets in 198.18.0.0/15,
// e.g. "198.18.80"), both ends and loopback up, and removes them when the test ends. It needs
// root and ip (RequireRoot, RequireTool).
func VethNamespaces(t *testing.T, prefix, subnet string) VethLink {
	t.Helper()
	RequireRoot(t)
	l := VethLink{IP: RequireTool(t, "ip"), NSA: prefix + "a", NSB: prefix + "b", IfA: prefix + "0a", IfB: prefix + "0b",
		AddrA: subnet + ".1", AddrB: subnet + ".2"}
	if len(l.IfA) > 15 {
		t.Fatalf("interface name %s is longer than 15 characters: use a shorter prefix", l.IfA)
	}
	for _, ns := range []string{l.NSA, l.NSB} {
		l.Run(t, "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command(l.IP, "netns", "del", ns).Run() })
	}
	l.Run(t, "link", "add", l.IfA, "netns", l.NSA, "type", "veth", "peer", "name", l.IfB, "netns", l.NSB)
	l.Run(t, "-n", l.NSA, "addr", "add", l.AddrA+"/24", "dev", l.IfA)
	l.Run(t, "-n", l.NSB, "addr", "add", l.AddrB+"/24", "dev", l.IfB)
	for ns, dev := range map[string]string{l.NSA: l.IfA, l.NSB: l.IfB} {
		l.Run(t, "-n", ns, "link", "set", dev, "up")
		l.Run(t, "-n", ns, "link", "set", "lo", "up")
	}
	return l
}

// Run runs ip with args and fails the test if it fails.
func (l VethLink) Run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(l.IP, args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// KeepSystemClockFrequency restores the system clock's frequency and status when the test ends:
// a ptp4l or phc2sys the test runs with software timestamping steers this machine's clock.
func KeepSystemClockFrequency(t *testing.T) {
	t.Helper()
	var tx unix.Timex
	if _, err := unix.Adjtimex(&tx); err != nil {
		t.Fatalf("reading the system clock's frequency: %v", err)
	}
	t.Cleanup(func() {
		restore := unix.Timex{Modes: unix.ADJ_FREQUENCY | unix.ADJ_STATUS, Freq: tx.Freq, Status: tx.Status}
		if _, err := unix.Adjtimex(&restore); err != nil {
			t.Errorf("restoring the system clock's frequency: %v", err)
		}
	})
}

// String names the link for messages.
func (l VethLink) String() string {
	return fmt.Sprintf("%s/%s (%s) - %s/%s (%s)", l.NSA, l.IfA, l.AddrA, l.NSB, l.IfB, l.AddrB)
}
