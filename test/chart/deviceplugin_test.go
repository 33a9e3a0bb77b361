package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const devicePluginDS = "t-tickstack-sriov-device-plugin"

// sriovDevicePlugin.enabled adds the device plugin's DaemonSet and a Role that lets the operator
// read and roll that DaemonSet alone, and tells the operator its name; off, neither.
func TestSRIOVDevicePluginOnlyWhenEnabled(t *testing.T) {
	if _, ok := managerArgs(t, mustRender(t))["--device-plugin-daemonset"]; ok {
		t.Error("the default render gives the operator --device-plugin-daemonset")
	}
	objs := mustRender(t, "sriovDevicePlugin.enabled=true")
	var got []string
	for _, o := range added(t, objs) {
		got = append(got, key(o))
	}
	slices.Sort(got)
	want := []string{"DaemonSet " + devicePluginDS, "Role t-tickstack-manager-sriov-device-plugin", "RoleBinding t-tickstack-manager-sriov-device-plugin"}
	if !slices.Equal(got, want) {
		t.Errorf("sriovDevicePlugin.enabled adds %v, want %v", got, want)
	}
	if a := managerArgs(t, objs)["--device-plugin-daemonset"]; a != devicePluginDS {
		t.Errorf("--device-plugin-daemonset=%q, want %q", a, devicePluginDS)
	}
	role := named(t, objs, "Role", "t-tickstack-manager-sriov-device-plugin")
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	if len(rules) != 1 {
		t.Fatalf("role rules %v", rules)
	}
	r := rules[0].(map[string]any)
	names, _, _ := unstructured.NestedStringSlice(r, "resourceNames")
	verbs, _, _ := unstructured.NestedStringSlice(r, "verbs")
	if !slices.Equal(names, []string{devicePluginDS}) || !slices.Equal(verbs, []string{"get", "patch"}) {
		t.Errorf("the operator may %v %v: want get and patch of %s alone", verbs, names, devicePluginDS)
	}
}

// The DaemonSet runs the configured image on the agent's nodes, with the kubelet's device plugin
// directories under agent.kubelet.rootDir, the operator's ConfigMap (optional: it appears once the
// operator runs) and the operator's resource prefix.
func TestSRIOVDevicePluginDaemonSet(t *testing.T) {
	objs := mustRender(t, "sriovDevicePlugin.enabled=true", "sriovDevicePlugin.image.repository=images.example/sriovdp",
		"sriovDevicePlugin.image.tag=v9.9.9", "agent.kubelet.rootDir=/srv/kubelet", "manager.resourcePrefix=ts.example",
		"agent.nodeSelector.ts\\.example/role=trading")
	ds := named(t, objs, "DaemonSet", devicePluginDS)
	spec := templateSpec(ds)
	c := containers(ds)
	if len(c) != 1 {
		t.Fatalf("containers %v", c)
	}
	if c[0]["image"] != "images.example/sriovdp:v9.9.9" {
		t.Errorf("image %v", c[0]["image"])
	}
	args, _, _ := unstructured.NestedStringSlice(c[0], "args")
	if !slices.Contains(args, "--resource-prefix=ts.example") || !slices.Contains(args, "--config-file=/etc/pcidp/config.json") {
		t.Errorf("args %v: want the operator's resource prefix and the mounted configuration", args)
	}
	if spec["automountServiceAccountToken"] != false {
		t.Error("the plugin talks only to the kubelet: no service account token")
	}
	sel, _, _ := unstructured.NestedStringMap(spec, "nodeSelector")
	if sel["ts.example/role"] != "trading" {
		t.Errorf("nodeSelector %v: want the agent's", sel)
	}
	vols, _, _ := unstructured.NestedSlice(spec, "volumes")
	paths := map[string]string{}
	for _, v := range vols {
		v := v.(map[string]any)
		if p, ok, _ := unstructured.NestedString(v, "hostPath", "path"); ok {
			paths[v["name"].(string)] = p
		}
		if cm, ok, _ := unstructured.NestedMap(v, "configMap"); ok {
			if cm["name"] != "sriovdp-config" || cm["optional"] != true {
				t.Errorf("config volume %v: want the operator's ConfigMap sriovdp-config, optional", cm)
			}
		}
	}
	if paths["device-plugins"] != "/srv/kubelet/device-plugins" || paths["plugins-registry"] != "/srv/kubelet/plugins_registry" {
		t.Errorf("host paths %v: want the kubelet's directories under agent.kubelet.rootDir", paths)
	}
}

// The container's command, run by sh as the kubelet would, with the configuration path and the
// upstream entry point replaced: with no pool it waits (a restart loop otherwise: sriovdp exits on an
// empty configuration) and stops at once on SIGTERM; with a pool it execs the entry point with the
// container's arguments.
func TestSRIOVDevicePluginWaitsWithoutPool(t *testing.T) {
	ds := named(t, mustRender(t, "sriovDevicePlugin.enabled=true"), "DaemonSet", devicePluginDS)
	c := containers(ds)[0]
	command, _, _ := unstructured.NestedStringSlice(c, "command")
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if len(command) != 4 || command[0] != "/bin/sh" || command[1] != "-c" {
		t.Fatalf("command %v: want /bin/sh -c SCRIPT NAME", command)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config.json")
	entry := filepath.Join(dir, "entrypoint.sh")
	if err := os.WriteFile(entry, []byte("#!/bin/sh\necho \"entrypoint $*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer("/etc/pcidp/config.json", config, "/entrypoint.sh", entry).Replace(command[2])
	if script == command[2] {
		t.Fatal("the script names neither /etc/pcidp/config.json nor /entrypoint.sh")
	}
	run := func() *exec.Cmd {
		return exec.Command("/bin/sh", append([]string{"-c", script, command[3]}, args...)...)
	}

	// No configuration yet, then an empty one: waits until SIGTERM, then exits 0.
	for _, content := range []string{"", `{"resourceList": []}`} {
		if content != "" {
			if err := os.WriteFile(config, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := run()
		// A file, not a pipe: the waiting sleep holds the output open after the shell exits. Its
		// own process group, so that the sleep goes with it (as the container's processes do).
		outFile, err := os.CreateTemp(dir, "out")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = outFile, outFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
		out := func() string { b, _ := os.ReadFile(outFile.Name()); return string(b) }
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Fatalf("configuration %q: the container exited (%v) instead of waiting:\n%s", content, err, out())
		case <-time.After(time.Second):
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("configuration %q: exit on SIGTERM: %v", content, err)
			}
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("configuration %q: still running 5 s after SIGTERM", content)
		}
		if !strings.Contains(out(), "no resource pool") {
			t.Errorf("configuration %q: output %q does not say why it waits", content, out())
		}
	}

	// A pool: the entry point, with the container's arguments.
	if err := os.WriteFile(config, []byte(`{"resourceList": [{"resourceName": "md", "selectors": [{"pfNames": ["ens1f0"]}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, command[3]}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with a pool: %v\n%s", err, out)
	}
	if want := "entrypoint " + strings.Join(args, " "); strings.TrimSpace(string(out)) != want {
		t.Errorf("with a pool: %q, want %q", strings.TrimSpace(string(out)), want)
	}
}
