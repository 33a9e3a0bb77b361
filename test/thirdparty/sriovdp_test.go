// Package thirdparty runs the upstream components tickstack renders configuration for, built from
// the sources pinned in hack/third-party.lock, on what tickstack renders: their own parsers are the
// reference, not tickstack's copy of their formats.
package thirdparty

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/render"
	"github.com/tickstack/tickstack/internal/testutil"
)

// sriovdp runs the device plugin on config until it has validated it (it then discovers the host's
// devices and serves them; the test stops it there) and returns its log.
func sriovdp(t *testing.T, bin, config string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(f, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config-file", f, "--resource-prefix", "unused.example", "--logtostderr", "-v", "10")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	// Past validation it discovers devices (and, given the PCI database, serves them until killed).
	for {
		select {
		case <-done:
			return out.String()
		case <-time.After(100 * time.Millisecond):
		}
		if strings.Contains(out.String(), "Discovering host devices") {
			_ = cmd.Process.Kill()
			<-done
			return out.String()
		}
		if ctx.Err() != nil {
			t.Fatalf("sriovdp neither validated nor refused the configuration in 30 s:\n%s", out.String())
		}
	}
}

// The configuration the operator renders from profiles is accepted by the real device plugin's
// parser and validation, pool by pool, with the selectors as rendered: several profiles, VF
// ranges in pfNames, interface names, vendors, the longest resource name the API allows.
func TestDevicePluginAcceptsRenderedConfig(t *testing.T) {
	bin := filepath.Join(testutil.ThirdParty(t, "sriov-network-device-plugin"), "sriovdp")
	long := strings.Repeat("x", 63)
	nic := func(name, resource string, sel tsv1.NICSelector) tsv1.NICSpec {
		return tsv1.NICSpec{Name: name, Selector: sel, NumVFs: ptr.To[int32](8), ResourceName: resource}
	}
	profiles := []tsv1.LatencyProfile{
		{ObjectMeta: metav1.ObjectMeta{Name: "md"}, Spec: tsv1.LatencyProfileSpec{NICs: []tsv1.NICSpec{
			nic("feed", "md_feed", tsv1.NICSelector{Vendor: "8086", PFNames: []string{"ens1f0#0-3", "ens1f1#4,6-7"}}),
			nic("orders", "md_orders", tsv1.NICSelector{Vendor: "15b3", InterfaceNames: []string{"enp65s0f0"}}),
		}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "risk"}, Spec: tsv1.LatencyProfileSpec{NICs: []tsv1.NICSpec{
			nic("any", long, tsv1.NICSelector{Vendor: "1af4"}),
			// The same pool as md's feed: one pool, not two.
			nic("feed", "md_feed", tsv1.NICSelector{Vendor: "8086", PFNames: []string{"ens1f0#0-3", "ens1f1#4,6-7"}}),
		}}},
	}
	cm, err := render.DevicePluginConfigMap(profiles, "ts.example", "sriovdp-config", "ns")
	if err != nil {
		t.Fatal(err)
	}
	log := sriovdp(t, bin, cm.Data[render.DevicePluginConfigKey])
	for _, pool := range []string{"md_feed", "md_orders", long} {
		if want := fmt.Sprintf("validating resource name \"ts.example/%s\"", pool); !strings.Contains(log, want) {
			t.Errorf("the plugin's log lacks %q:\n%s", want, log)
		}
	}
	for _, bad := range []string{"error unmarshalling", "invalid", "Exiting", "unable to get SelectorObj", "already exists"} {
		if strings.Contains(log, bad) {
			t.Errorf("the plugin's log says %q:\n%s", bad, log)
		}
	}
	// The parsed selectors, as the plugin printed them: the VF ranges and names kept.
	for _, want := range []string{"ens1f0#0-3", "ens1f1#4,6-7", "enp65s0f0"} {
		if !strings.Contains(log, want) {
			t.Errorf("the plugin's log lacks %q:\n%s", want, log)
		}
	}
}

// The check above can fail: the plugin refuses a configuration that is wrong in the ways a
// hand-written copy of its format could be.
func TestDevicePluginRefusesWhatItShould(t *testing.T) {
	bin := filepath.Join(testutil.ThirdParty(t, "sriov-network-device-plugin"), "sriovdp")
	for name, config := range map[string]string{
		"a resource name with a slash": `{"resourceList":[{"resourceName":"md/feed","selectors":[{"vendors":["8086"]}]}]}`,
		"a device type it lacks":       `{"resourceList":[{"resourceName":"md","deviceType":"vfio","selectors":[{"vendors":["8086"]}]}]}`,
		"the same pool twice":          `{"resourceList":[{"resourceName":"md","selectors":[{"vendors":["8086"]}]},{"resourceName":"md","selectors":[{"vendors":["15b3"]}]}]}`,
		"not JSON":                     `resourceList: []`,
	} {
		log := sriovdp(t, bin, config)
		if strings.Contains(log, "Discovering host devices") {
			t.Errorf("%s: accepted:\n%s", name, log)
		}
	}
}
