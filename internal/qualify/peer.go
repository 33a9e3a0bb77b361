package qualify

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PeerNamespace is a second interface of the node (a second VF of the qualified port) moved into a
// network namespace of its own, with an address, and a reflector serving there: the peer of the
// conformance cases and the ping-pong when no other node is at hand. Close puts the interface back
// into the caller's namespace and removes the namespace.
type PeerNamespace struct {
	// Name is the namespace (ip netns); Interface the moved interface; Address its IPv4 address.
	Name, Interface, Address string
	ip                       string
	reflector                *exec.Cmd
}

// StartPeerNamespace moves ifname into a new namespace named ns, gives it addr (CIDR, in the
// qualified interface's subnet), brings it up and starts the reflector there: argv is the command
// that serves it, run with "ip netns exec ns"; it must print a line "listening" once it accepts
// control connections. Everything is undone when a step fails.
func StartPeerNamespace(ctx context.Context, ns, ifname, addr string, argv []string, logw io.Writer) (*PeerNamespace, error) {
	ipa, _, err := net.ParseCIDR(addr)
	if err != nil || ipa.To4() == nil {
		return nil, fmt.Errorf("--peer-address %q: give an IPv4 address with its prefix length, in the qualified interface's subnet (198.18.0.2/24)", addr)
	}
	if _, err := net.InterfaceByName(ifname); err != nil {
		return nil, fmt.Errorf("--peer-interface %s: no such interface in this network namespace (ip -br link lists them): %w", ifname, err)
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return nil, fmt.Errorf("--peer-interface needs iproute2's ip: %w", err)
	}
	p := &PeerNamespace{Name: ns, Interface: ifname, Address: ipa.String(), ip: ip}
	run := func(args ...string) error {
		if out, err := exec.CommandContext(ctx, ip, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := run("netns", "add", ns); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"link", "set", "dev", ifname, "netns", ns},
		{"-n", ns, "addr", "add", addr, "dev", ifname},
		{"-n", ns, "link", "set", "dev", ifname, "up"},
		{"-n", ns, "link", "set", "dev", "lo", "up"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			p.Close()
			return nil, err
		}
	}
	cmd := exec.Command(ip, append([]string{"netns", "exec", ns}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.Close()
		return nil, err
	}
	cmd.Stderr = logw
	if err := cmd.Start(); err != nil {
		p.Close()
		return nil, fmt.Errorf("starting the peer's reflector: %w", err)
	}
	p.reflector = cmd
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			fmt.Fprintln(logw, sc.Text())
			if !ok && strings.Contains(sc.Text(), "listening") {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			p.Close()
			return nil, fmt.Errorf("the peer's reflector in namespace %s exited before it listened", ns)
		}
	case <-time.After(30 * time.Second):
		p.Close()
		return nil, fmt.Errorf("the peer's reflector in namespace %s did not listen within 30s", ns)
	}
	return p, nil
}

// Close stops the reflector, moves the interface back into this process's namespace and removes
// the peer's namespace.
func (p *PeerNamespace) Close() {
	if p.reflector != nil {
		_ = syscall.Kill(-p.reflector.Process.Pid, syscall.SIGKILL)
		werr := p.reflector.Wait()
		_ = werr // killed on purpose
		p.reflector = nil
	}
	_ = exec.Command(p.ip, "-n", p.Name, "link", "set", "dev", p.Interface, "netns", strconv.Itoa(os.Getpid())).Run()
	_ = exec.Command(p.ip, "netns", "del", p.Name).Run()
}
