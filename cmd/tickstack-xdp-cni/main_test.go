package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickstack/tickstack/internal/testutil"
)

// The plugin as a container runtime runs it (the binary, CNI_* variables, the config on stdin)
// against the real tickstack-xdpd, on a veth pair between two namespaces the test creates.
func TestPluginPlumbsThroughTheRealDaemon(t *testing.T) {
	link := testutil.VethNamespaces(t, fmt.Sprintf("tsxc%d", os.Getpid()%10000), "198.18.77")
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	daemon := filepath.Join(root, "dataplane", "build", "tickstack-xdpd")
	if _, err := os.Stat(daemon); err != nil {
		testutil.Unavailable(t, daemon+" is not built (make dataplane)")
	}
	dir := t.TempDir()
	plugin := filepath.Join(dir, "tickstack-xdp")
	if out, err := exec.Command("go", "build", "-o", plugin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Short: the pod sockets' paths must fit a sockaddr_un (108 bytes) with a pod UID in them.
	runDir, err := os.MkdirTemp("", "tsxc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runDir) })
	start := func() *exec.Cmd {
		d := exec.Command(daemon, "--run-dir", runDir)
		d.Stderr = os.Stderr
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		testutil.Poll(t, 10*time.Second, "tickstack-xdpd's ctl.sock", func() error {
			_, err := os.Stat(filepath.Join(runDir, "ctl.sock"))
			return err
		})
		return d
	}
	stop := func(d *exec.Cmd) {
		_ = d.Process.Signal(syscall.SIGTERM)
		if err := d.Wait(); err != nil {
			t.Errorf("tickstack-xdpd after SIGTERM: %v", err)
		}
	}
	d := start()
	t.Cleanup(func() {
		if d.ProcessState == nil {
			stop(d)
		}
	})

	const uid = "0e4c6b1a-5d2f-4c1e-9a3b-7f8e9d0c1b2a"
	netns := "/var/run/netns/" + link.NSA
	prev := `{"cniVersion":"1.0.0","interfaces":[{"name":"` + link.IfA + `","sandbox":"` + netns + `"}],"ips":[{"address":"` + link.AddrA + `/24","interface":0}]}`
	conf := func(withPrev bool) string {
		c := `{"cniVersion":"1.0.0","name":"prof-md","type":"tickstack-xdp","runDir":"` + runDir + `"`
		if withPrev {
			c += `,"prevResult":` + prev
		}
		return c + "}"
	}
	cni := func(cmd, ifname, args, config string) (string, error) {
		c := exec.Command(plugin)
		c.Env = append(os.Environ(), "CNI_COMMAND="+cmd, "CNI_CONTAINERID=tsxc-test", "CNI_NETNS="+netns,
			"CNI_IFNAME="+ifname, "CNI_PATH="+dir, "CNI_ARGS="+args)
		c.Stdin = strings.NewReader(config)
		var out, stderr bytes.Buffer
		c.Stdout, c.Stderr = &out, &stderr
		err := c.Run()
		if err != nil {
			return out.String(), fmt.Errorf("%s: %v: %s %s", cmd, err, out.String(), stderr.String())
		}
		return out.String(), nil
	}
	podArgs := "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=trader;K8S_POD_UID=" + uid
	xdpOn := func() bool {
		out, err := exec.Command(link.IP, "-n", link.NSA, "-d", "link", "show", "dev", link.IfA).CombinedOutput()
		if err != nil {
			t.Fatalf("ip link show: %v: %s", err, out)
		}
		return strings.Contains(string(out), "prog/xdp")
	}
	status := func() string {
		out, err := exec.Command(daemon, "ctl", "--run-dir", runDir, "status").CombinedOutput()
		if err != nil {
			t.Fatalf("tickstack-xdpd ctl status: %v: %s", err, out)
		}
		return string(out)
	}

	out, err := cni("ADD", link.IfA, podArgs, conf(true))
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("ADD printed %q: %v", out, err)
	}
	_ = json.Unmarshal([]byte(prev), &want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ADD result %v, want the previous plugin's %v passed through", got, want)
	}
	if !xdpOn() {
		t.Errorf("after ADD, %s in %s has no XDP program", link.IfA, link.NSA)
	}
	if s := status(); !strings.Contains(s, uid+" "+link.IfA) {
		t.Errorf("daemon status %q does not list pod %s on %s", s, uid, link.IfA)
	}
	if _, err := os.Stat(filepath.Join(runDir, "pods", uid, "xdp.sock")); err != nil {
		t.Errorf("the pod's socket: %v", err)
	}
	if _, err := cni("CHECK", link.IfA, podArgs, conf(true)); err != nil {
		t.Errorf("CHECK of a plumbed pod: %v", err)
	}

	t.Run("refusals name the cause", func(t *testing.T) {
		cases := []struct{ cmd, ifname, args, config, want string }{
			{"ADD", "nosuch0", "IgnoreUnknown=1;K8S_POD_UID=1b2c", conf(true), "tickstack-xdpd refused to attach nosuch0 of pod 1b2c"},
			{"ADD", link.IfA, "IgnoreUnknown=1;K8S_POD_NAME=x", conf(true), "CNI_ARGS has no K8S_POD_UID"},
			{"ADD", link.IfA, podArgs, conf(false), "must be chained after the plugin that creates the interface"},
			{"ADD", link.IfA, podArgs, strings.Replace(conf(true), runDir, "relative/dir", 1), "relative/dir\\\" must be an absolute path"},
		}
		for _, c := range cases {
			if _, err := cni(c.cmd, c.ifname, c.args, c.config); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s %s: got %v, want an error saying %q", c.cmd, c.ifname, c.args, err, c.want)
			}
		}
	})

	if _, err := cni("DEL", link.IfA, podArgs, conf(false)); err != nil {
		t.Fatal(err)
	}
	if xdpOn() {
		t.Errorf("after DEL, %s in %s still has an XDP program", link.IfA, link.NSA)
	}
	if s := status(); strings.Contains(s, uid) {
		t.Errorf("after DEL the daemon still lists the pod: %q", s)
	}
	if _, err := cni("DEL", link.IfA, podArgs, conf(false)); err != nil {
		t.Errorf("a second DEL: %v", err)
	}

	stop(d)
	if _, err := cni("DEL", link.IfA, podArgs, conf(false)); err != nil {
		t.Errorf("DEL with the daemon stopped: %v", err)
	}
	if _, err := cni("ADD", link.IfA, podArgs, conf(true)); err == nil || !strings.Contains(err.Error(), "is tickstack-xdpd running on this node") {
		t.Errorf("ADD with the daemon stopped: got %v, want an error asking whether tickstack-xdpd runs", err)
	}
}
