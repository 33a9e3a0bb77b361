package ptp

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// ReadOnlyProxy serves ptp4l's management socket read-only, for clients that may read ptp4l's state
// but must not change it (the benchmark's runner pods): a GET management message is forwarded to
// ptp4l's socket and ptp4l's answers are sent back; a SET, a COMMAND, any other message type or a
// malformed message is dropped and logged. linuxptp 4.0 has this as ptp4l's uds_ro_address; the
// linuxptp the images ship (3.1.1) does not.
//
// A client in a pod binds its reply socket inside its own mount namespace (pmc -i), a path ptp4l
// could not resolve. The proxy learns the client's pid from SCM_CREDENTIALS (the kernel's, not the
// client's word) and opens the reply socket below /proc/<pid>/root with openat2(RESOLVE_IN_ROOT,
// RESOLVE_NO_MAGICLINKS) and O_NOFOLLOW, accepting only a socket: a pod's symlinks resolve inside
// the pod's own root and cannot point the proxy at a host path. It answers through
// /proc/self/fd/<that descriptor>. Each client gets an upstream socket of its own in ReplyDir (a
// directory only the proxy writes) for ptp4l's answers; clients idle for clientIdle are dropped,
// and at most maxClients are served at once.
type ReadOnlyProxy struct {
	// Listen is the proxy's socket, created (a stale one replaced) and made 0666: the benchmark
	// image may run as any user, and the socket only reads.
	Listen string
	// Upstream is ptp4l's management socket (its uds_address).
	Upstream string
	// ReplyDir holds the per-client upstream sockets ptp4l answers to; only the proxy writes it.
	ReplyDir string
	// ProcDir is where a client's root is found by its pid (default /proc; the agent shares the
	// host's PID namespace).
	ProcDir string
	// Logger receives refusals (at most one per second) and errors.
	Logger logr.Logger
}

// PTP management messages (IEEE 1588-2008 clause 15): a 34-byte header, the target port identity
// (10 bytes), startingBoundaryHops, boundaryHops, then a byte whose low nibble is the actionField.
const (
	ptpHeaderLen       = 34
	mgmtActionOffset   = ptpHeaderLen + 10 + 2
	mgmtMinLen         = mgmtActionOffset + 2 + 6 // reserved byte, then at least a TLV header and its managementId
	ptpMessageMgmt     = 0xd
	mgmtActionGet      = 0
	maxMgmtMessageLen  = 1500
	maxClients         = 64
	clientIdle         = 30 * time.Second
	refusalLogInterval = time.Second
)

// mgmtActions names the actionField values.
var mgmtActions = [...]string{"GET", "SET", "RESPONSE", "COMMAND", "ACKNOWLEDGE"}

// CheckReadOnly says why msg may not pass to ptp4l through a read-only socket (nil: it is a GET
// management message of the length its header states).
func CheckReadOnly(msg []byte) error {
	if len(msg) < mgmtMinLen {
		return fmt.Errorf("%d bytes, shorter than a management message (%d)", len(msg), mgmtMinLen)
	}
	if len(msg) > maxMgmtMessageLen {
		return fmt.Errorf("%d bytes, longer than %d", len(msg), maxMgmtMessageLen)
	}
	if t := msg[0] & 0x0f; t != ptpMessageMgmt {
		return fmt.Errorf("message type %#x is not management (%#x)", t, ptpMessageMgmt)
	}
	if l := int(binary.BigEndian.Uint16(msg[2:4])); l != len(msg) {
		return fmt.Errorf("messageLength %d but %d bytes", l, len(msg))
	}
	if a := msg[mgmtActionOffset] & 0x0f; a != mgmtActionGet {
		name := "action " + strconv.Itoa(int(a))
		if int(a) < len(mgmtActions) {
			name = mgmtActions[a]
		}
		return fmt.Errorf("%s refused: this socket only reads (GET)", name)
	}
	return nil
}

// roClient is one client process's reply path.
type roClient struct {
	key      string
	reply    *os.File // O_PATH descriptor of the client's reply socket
	upstream *net.UnixConn
	path     string // upstream's socket in ReplyDir
	mu       sync.Mutex
	last     time.Time
}

// Run serves until ctx ends; it removes its sockets on return.
func (p *ReadOnlyProxy) Run(ctx context.Context) error {
	procDir := p.ProcDir
	if procDir == "" {
		procDir = "/proc"
	}
	if err := os.MkdirAll(p.ReplyDir, 0o700); err != nil {
		return fmt.Errorf("read-only PTP socket: %w", err)
	}
	_ = os.Remove(p.Listen)
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p.Listen, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("read-only PTP socket %s: %w", p.Listen, err)
	}
	defer os.Remove(p.Listen)
	defer ln.Close()
	// The directory is the agent's (pods mount it read-only): no one can swap the path for a link
	// between the bind and this chmod.
	if err := os.Chmod(p.Listen, 0o666); err != nil {
		return fmt.Errorf("read-only PTP socket %s: %w", p.Listen, err)
	}
	if err := setPassCred(ln); err != nil {
		return fmt.Errorf("read-only PTP socket %s: SO_PASSCRED: %w", p.Listen, err)
	}
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()

	s := &roServer{p: p, procDir: procDir, ln: ln, clients: map[string]*roClient{}}
	defer s.closeAll()
	buf := make([]byte, maxMgmtMessageLen+1)
	oob := make([]byte, credOOBSize())
	for {
		n, oobn, _, from, err := ln.ReadMsgUnix(buf, oob)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read-only PTP socket %s: %w", p.Listen, err)
		}
		s.handle(buf[:n], oob[:oobn], from)
	}
}

// roServer is a running proxy's state.
type roServer struct {
	p        *ReadOnlyProxy
	procDir  string
	ln       *net.UnixConn
	mu       sync.Mutex
	clients  map[string]*roClient
	seq      int
	lastLog  time.Time
	dropped  int
	closedWG sync.WaitGroup
}

func (s *roServer) refuse(format string, args ...any) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastLog) < refusalLogInterval {
		s.dropped++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if s.dropped > 0 {
		msg += fmt.Sprintf(" (%d more refusals not logged)", s.dropped)
	}
	s.lastLog, s.dropped = now, 0
	s.p.Logger.Info("read-only PTP socket: message dropped: " + msg)
}

func (s *roServer) handle(msg, oob []byte, from *net.UnixAddr) {
	pid, err := senderPID(oob)
	if err != nil {
		s.refuse("%v", err)
		return
	}
	if from == nil || !strings.HasPrefix(from.Name, "/") {
		s.refuse("pid %d sent from no path (bind a reply socket, pmc -i)", pid)
		return
	}
	if err := CheckReadOnly(msg); err != nil {
		s.refuse("pid %d: %v", pid, err)
		return
	}
	c, err := s.client(pid, from.Name)
	if err != nil {
		s.refuse("pid %d, reply socket %s: %v", pid, from.Name, err)
		return
	}
	c.mu.Lock()
	c.last = time.Now()
	c.mu.Unlock()
	if _, err := c.upstream.Write(msg); err != nil {
		s.refuse("pid %d: forwarding to %s: %v", pid, s.p.Upstream, err)
	}
}

// client returns the client of (pid, path), set up on its first message.
func (s *roServer) client(pid int32, path string) (*roClient, error) {
	key := strconv.Itoa(int(pid)) + ":" + path
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[key]; c != nil {
		return c, nil
	}
	s.expireLocked()
	if len(s.clients) >= maxClients {
		return nil, fmt.Errorf("%d clients already", maxClients)
	}
	reply, err := openReplySocket(s.procDir, pid, path)
	if err != nil {
		return nil, err
	}
	s.seq++
	up := filepath.Join(s.p.ReplyDir, fmt.Sprintf("ro.%d.sock", s.seq))
	_ = os.Remove(up)
	conn, err := net.DialUnix("unixgram", &net.UnixAddr{Name: up, Net: "unixgram"}, &net.UnixAddr{Name: s.p.Upstream, Net: "unixgram"})
	if err != nil {
		reply.Close()
		return nil, fmt.Errorf("connecting to %s: %w", s.p.Upstream, err)
	}
	c := &roClient{key: key, reply: reply, upstream: conn, path: up, last: time.Now()}
	s.clients[key] = c
	s.closedWG.Add(1)
	go s.relay(c)
	return c, nil
}

// relay sends ptp4l's answers on c's upstream socket back to the client until c is closed.
func (s *roServer) relay(c *roClient) {
	defer s.closedWG.Done()
	to := &net.UnixAddr{Name: "/proc/self/fd/" + strconv.Itoa(int(c.reply.Fd())), Net: "unixgram"}
	buf := make([]byte, 64<<10)
	for {
		n, err := c.upstream.Read(buf)
		if err != nil {
			return // closed
		}
		if _, err := s.ln.WriteToUnix(buf[:n], to); err != nil {
			// The client is gone (its socket closed): forget it; a new process starts afresh.
			s.mu.Lock()
			s.dropLocked(c)
			s.mu.Unlock()
			return
		}
	}
}

// expireLocked drops clients idle for clientIdle.
func (s *roServer) expireLocked() {
	now := time.Now()
	for _, c := range s.clients {
		c.mu.Lock()
		idle := now.Sub(c.last) > clientIdle
		c.mu.Unlock()
		if idle {
			s.dropLocked(c)
		}
	}
}

func (s *roServer) dropLocked(c *roClient) {
	if s.clients[c.key] != c {
		return
	}
	delete(s.clients, c.key)
	_ = c.upstream.Close()
	_ = os.Remove(c.path)
	_ = c.reply.Close()
}

func (s *roServer) closeAll() {
	s.mu.Lock()
	for _, c := range s.clients {
		s.dropLocked(c)
	}
	s.mu.Unlock()
	s.closedWG.Wait()
}
