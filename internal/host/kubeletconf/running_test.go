package kubeletconf

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickstack/tickstack/internal/testutil"
)

// TestMain makes the test binary a stand-in kubelet when asked: it listens on a TCP port, prints
// it and waits; its command line carries the flags FindKubelet reads.
func TestMain(m *testing.M) {
	if os.Getenv("KUBELETCONF_TEST_LISTEN") == "1" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(l.Addr().(*net.TCPAddr).Port) + "\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeKubelet starts the stand-in with args and returns it and its port.
func fakeKubelet(t *testing.T, args ...string) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBELETCONF_TEST_LISTEN=1")
	line, err := bufio.NewReader(testutil.StartHelper(t, cmd)).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return cmd, port
}

// TestFindKubeletAndReadFiles: the process listening on the port is found by its socket, on the
// real /proc; its --config and --config-dir drop-ins merge as the kubelet merges them; a file
// changed after the process started is refused.
func TestFindKubeletAndReadFiles(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "kubelet.yaml")
	confDir := filepath.Join(dir, "conf.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		main:                                   "kind: KubeletConfiguration\ncpuManagerPolicy: none\nreservedSystemCPUs: \"0\"\nevictionHard:\n  memory.available: 200Mi\n  nodefs.available: 2%\n",
		filepath.Join(confDir, "10-a.conf"):    `{"cpuManagerPolicy":"static","evictionHard":{"memory.available":"100Mi"}}`,
		filepath.Join(confDir, "20-b.conf"):    "reservedSystemCPUs: \"0-1\"\n",
		filepath.Join(confDir, "30-c.ignored"): "reservedSystemCPUs: \"7\"\n",
	}
	past := time.Now().Add(-time.Hour)
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	cmd, port := fakeKubelet(t, "--config="+main, "--config-dir", confDir)

	k, err := FindKubelet("/proc", "/proc/self/net", port)
	if err != nil {
		t.Fatal(err)
	}
	if k.PID != cmd.Process.Pid || k.Config != main || k.ConfigDir != confDir {
		t.Fatalf("found %+v, want pid %d config %s dir %s", k, cmd.Process.Pid, main, confDir)
	}
	if d := time.Since(k.Started); d < 0 || d > time.Minute {
		t.Fatalf("start time %s is %s ago", k.Started, d)
	}
	b, read, err := ReadFiles("/proc", k)
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != 3 {
		t.Errorf("read %v, want the main file and two drop-ins", read)
	}
	var doc struct {
		KubeletConfig map[string]any `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(doc.KubeletConfig)
	want := `{"cpuManagerPolicy":"static","evictionHard":{"memory.available":"100Mi","nodefs.available":"2%"},"kind":"KubeletConfiguration","reservedSystemCPUs":"0-1"}`
	if string(got) != want {
		t.Errorf("merged %s\nwant   %s", got, want)
	}

	// A drop-in written just before the start counts as read; one written after the start (past
	// the slack): the running values are unknown.
	later := filepath.Join(confDir, "20-b.conf")
	if err := os.WriteFile(later, []byte("reservedSystemCPUs: \"2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	justBefore := k.Started.Add(-10 * time.Millisecond)
	if err := os.Chtimes(later, justBefore, justBefore); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFiles("/proc", k); err != nil {
		t.Errorf("a drop-in written just before the start: %v", err)
	}
	after := k.Started.Add(StartSlack + time.Second)
	if err := os.Chtimes(later, after, after); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFiles("/proc", k); err == nil || !strings.Contains(err.Error(), "after the kubelet") {
		t.Errorf("a drop-in newer than the kubelet: got %v, want a refusal", err)
	}
}

// TestFindKubeletRefuses: no listener, or a listener without --config, is not a kubelet the
// agent reads.
func TestFindKubeletRefuses(t *testing.T) {
	_, port := fakeKubelet(t, "--kubeconfig=/x")
	if _, err := FindKubelet("/proc", "/proc/self/net", port); err == nil || !strings.Contains(err.Error(), "without --config") {
		t.Errorf("a listener without --config: got %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if _, err := FindKubelet("/proc", "/proc/self/net", free); err == nil || !strings.Contains(err.Error(), "no process listens") {
		t.Errorf("nothing listening: got %v", err)
	}
}

func TestFlagValue(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"kubelet", "--config=/a"}, "/a"},
		{[]string{"kubelet", "--config", "/b"}, "/b"},
		{[]string{"kubelet", "-config=/c", "--config-dir=/d"}, "/c"},
		{[]string{"kubelet", "--config=/a", "--config=/e"}, "/e"},
		{[]string{"kubelet", "--config-dir=/d"}, ""},
	} {
		if got := flagValue(c.args, "config"); got != c.want {
			t.Errorf("flagValue(%v) = %q, want %q", c.args, got, c.want)
		}
	}
}
