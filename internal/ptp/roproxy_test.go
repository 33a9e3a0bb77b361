package ptp

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// mgmtMessage is a management message of the given action, as pmc builds one for GET PRIORITY1.
func mgmtMessage(action byte) []byte {
	m := make([]byte, 54)
	m[0], m[1] = ptpMessageMgmt, 2
	binary.BigEndian.PutUint16(m[2:4], uint16(len(m)))
	m[mgmtActionOffset] = action
	binary.BigEndian.PutUint16(m[48:50], 1)      // tlvType MANAGEMENT
	binary.BigEndian.PutUint16(m[50:52], 2)      // lengthField: the managementId alone
	binary.BigEndian.PutUint16(m[52:54], 0x2005) // PRIORITY1
	return m
}

func TestCheckReadOnly(t *testing.T) {
	get := mgmtMessage(mgmtActionGet)
	long := append(mgmtMessage(mgmtActionGet), make([]byte, maxMgmtMessageLen)...)
	binary.BigEndian.PutUint16(long[2:4], uint16(len(long)))
	signaling := mgmtMessage(mgmtActionGet)
	signaling[0] = 0xc
	lying := mgmtMessage(mgmtActionGet)
	binary.BigEndian.PutUint16(lying[2:4], 48)
	for _, tt := range []struct {
		name, want string
		msg        []byte
	}{
		{"GET", "", get},
		{"SET", "SET refused: this socket only reads (GET)", mgmtMessage(1)},
		{"COMMAND", "COMMAND refused", mgmtMessage(3)},
		{"RESPONSE", "RESPONSE refused", mgmtMessage(2)},
		{"unknown action", "action 9 refused", mgmtMessage(9)},
		{"action in the high nibble ignored", "", mgmtMessage(0xf0)},
		{"short", "shorter than a management message", get[:40]},
		{"long", "longer than 1500", long},
		{"not management", "message type 0xc is not management", signaling},
		{"length mismatch", "messageLength 48 but 54 bytes", lying},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckReadOnly(tt.msg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestOpenReplySocketRefusesLinksAndFiles: the reply path is resolved inside the client's root and
// must end at a socket; a link to a socket (which could name a host socket) and a file are refused.
func TestOpenReplySocketRefusesLinksAndFiles(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "reply.sock")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Symlink(sock, filepath.Join(dir, "link.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pid := int32(os.Getpid())
	f, err := openReplySocket("/proc", pid, sock)
	if err != nil {
		t.Fatalf("a socket: %v", err)
	}
	f.Close()
	for _, p := range []string{filepath.Join(dir, "link.sock"), filepath.Join(dir, "file"), filepath.Join(dir, "absent")} {
		if f, err := openReplySocket("/proc", pid, p); err == nil {
			f.Close()
			t.Errorf("%s was accepted as a reply socket", p)
		}
	}
}

// TestReadOnlyProxyWithRealPtp4l runs ptp4l (software time stamping, a veth in a namespace) and the
// proxy in front of its management socket, and pmc from a mount namespace of its own whose reply
// socket ptp4l could not reach by path: through the proxy GET PRIORITY1 is answered and SET
// PRIORITY1 changes nothing; the same SET on ptp4l's own socket does change it (so the SET was a
// valid one).
func TestReadOnlyProxyWithRealPtp4l(t *testing.T) {
	lab := newPTPLab(t, "ro")
	unshare := tsutil.RequireTool(t, "unshare")
	conf := filepath.Join(lab.dir, "ptp4l.conf")
	upstream := filepath.Join(lab.dir, "ptp4l.sock")
	if err := os.WriteFile(conf, []byte("[global]\ndomainNumber 7\ntime_stamping software\nuds_address "+upstream+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ptp4l := exec.CommandContext(ctx, lab.ip, "netns", "exec", lab.nsMaster, lab.ptp4l, "-f", conf, "-i", lab.ifMaster, "-q")
	if err := ptp4l.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = ptp4l.Wait() })

	var mu sync.Mutex
	var logged []string
	p := &ReadOnlyProxy{Listen: filepath.Join(lab.dir, "ro.sock"), Upstream: upstream, ReplyDir: filepath.Join(lab.dir, "ro"),
		Logger: funcr.New(func(_, args string) { mu.Lock(); logged = append(logged, args); mu.Unlock() }, funcr.Options{})}
	tsutil.RunInBackground(t, ctx, "proxy", p.Run)
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range []string{upstream, p.Listen} {
		for {
			if _, err := os.Stat(s); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not appear", s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if st, err := os.Stat(p.Listen); err != nil || st.Mode().Perm() != 0o666 {
		t.Fatalf("the proxy's socket: %v, mode %v, want 0666", err, st.Mode())
	}

	// pmc in a mount namespace of its own, its reply socket on a tmpfs only that namespace sees.
	private := filepath.Join(lab.dir, "private")
	if err := os.Mkdir(private, 0o755); err != nil {
		t.Fatal(err)
	}
	podPmc := func(server, cmd string) string {
		t.Helper()
		script := `mount -t tmpfs tsro "$1" && exec "$2" -u -b 0 -d 7 -s "$3" -i "$1/pmc.sock" "$4"`
		out, err := exec.Command(unshare, "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", private, lab.pmc, server, cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("pmc %s via %s: %v\n%s", cmd, server, err, out)
		}
		return string(out)
	}
	hostPmc := func(cmd string) string {
		t.Helper()
		out, err := exec.Command(lab.pmc, "-u", "-b", "0", "-d", "7", "-s", upstream, "-i", filepath.Join(lab.dir, "host-pmc.sock"), cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("pmc %s: %v\n%s", cmd, err, out)
		}
		return string(out)
	}
	priority1 := regexp.MustCompile(`priority1\s+(\d+)`)
	read := func(out string) string {
		if m := priority1.FindStringSubmatch(out); m != nil {
			return m[1]
		}
		return ""
	}

	// Without the proxy ptp4l's answer cannot reach a reply socket in another mount namespace.
	if got := read(podPmc(upstream, "GET PRIORITY1")); got != "" {
		t.Fatalf("ptp4l answered a pmc in another mount namespace directly (%s): the test shows nothing", got)
	}
	var got string
	for i := 0; i < 5 && got == ""; i++ { // pmc waits only 100 ms for an answer
		got = read(podPmc(p.Listen, "GET PRIORITY1"))
	}
	if got != "128" {
		t.Fatalf("GET PRIORITY1 through the read-only socket: %q, want 128", got)
	}
	out := podPmc(p.Listen, "SET PRIORITY1 100")
	if strings.Contains(out, "RESPONSE") {
		t.Errorf("SET through the read-only socket was answered:\n%s", out)
	}
	if got := read(hostPmc("GET PRIORITY1")); got != "128" {
		t.Fatalf("after a SET through the read-only socket, priority1 is %q, want 128 unchanged", got)
	}
	mu.Lock()
	if !strings.Contains(strings.Join(logged, "\n"), "SET refused: this socket only reads (GET)") {
		t.Errorf("the refusal was not logged: %q", logged)
	}
	mu.Unlock()
	hostPmc("SET PRIORITY1 100")
	if got := read(hostPmc("GET PRIORITY1")); got != "100" {
		t.Fatalf("the same SET on ptp4l's own socket: priority1 %q, want 100 (else the refused SET proves nothing)", got)
	}
}
