// Command tickstack-xdp-cni is the CNI plugin "tickstack-xdp", chained last in the attachment of a
// LatencyProfile's bypass NIC group (internal/render.BypassConfList). It plumbs a latency pod's
// interface for the bypass stack without giving the pod any admin capability: it asks the node
// daemon tickstack-xdpd (dataplane/tools/tickstack-xdpd.c) to attach the steering program to the
// interface inside the pod's network namespace, and the daemon then serves the pod's processes on
// <runDir>/node/xdp.sock, which the device plugin tickstack-xdpd-plugin mounts into the latency container.
//
//	{"type": "tickstack-xdp", "runDir": "/run/tickstack/xdp"}
//
// ADD: sends "attach <K8S_POD_UID> <CNI_IFNAME>" with the pod's network namespace (an fd) to
// <runDir>/ctl.sock and passes the previous plugin's result through; the daemon's refusal fails the
// ADD with the daemon's words. DEL: sends "detach <K8S_POD_UID>"; a daemon that is not running, or a
// pod it does not know, is not an error (DEL must be idempotent). CHECK: sends the attach again,
// which is idempotent for the same namespace (a restarted daemon takes its pods over from its state
// file, so CHECK finds the pod attached; it plumbs one whose record was lost).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
	"golang.org/x/sys/unix"
)

// defaultRunDir is tickstack-xdpd's default --run-dir.
const defaultRunDir = "/run/tickstack/xdp"

// replyMax is the largest reply the daemon sends (its status listing).
const replyMax = 64 << 10

// ctlTimeout bounds a whole exchange with the daemon: the runtime waits on ADD.
const ctlTimeout = 10 * time.Second

type pluginConf struct {
	types.NetConf
	// RunDir is tickstack-xdpd's run directory (its ctl.sock).
	RunDir string `json:"runDir,omitempty"`
}

// podArgs are the CNI_ARGS of a Kubernetes pod that this plugin reads.
type podArgs struct {
	types.CommonArgs
	K8S_POD_UID types.UnmarshallableString //nolint:revive // the key as the runtime passes it
}

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cmdAdd, Del: cmdDel, Check: cmdCheck},
		version.PluginSupports("0.3.0", "0.3.1", "0.4.0", "1.0.0"), "tickstack-xdp: plumbs a bypass pod's interface through tickstack-xdpd")
}

func loadConf(args *skel.CmdArgs) (*pluginConf, string, error) {
	conf := &pluginConf{}
	if err := json.Unmarshal(args.StdinData, conf); err != nil {
		return nil, "", fmt.Errorf("tickstack-xdp: parse config: %w", err)
	}
	if conf.RawPrevResult != nil {
		if err := version.ParsePrevResult(&conf.NetConf); err != nil {
			return nil, "", fmt.Errorf("tickstack-xdp: parse prevResult: %w", err)
		}
	}
	if conf.RunDir == "" {
		conf.RunDir = defaultRunDir
	}
	if !filepath.IsAbs(conf.RunDir) {
		return nil, "", fmt.Errorf("tickstack-xdp: runDir %q must be an absolute path (tickstack-xdpd's --run-dir)", conf.RunDir)
	}
	pa := podArgs{}
	if err := types.LoadArgs(args.Args, &pa); err != nil {
		return nil, "", fmt.Errorf("tickstack-xdp: CNI_ARGS: %w", err)
	}
	return conf, string(pa.K8S_POD_UID), nil
}

func cmdAdd(args *skel.CmdArgs) error {
	conf, uid, err := loadConf(args)
	if err != nil {
		return err
	}
	if conf.PrevResult == nil {
		return fmt.Errorf("tickstack-xdp must be chained after the plugin that creates the interface (no prevResult)")
	}
	if err := attach(conf.RunDir, uid, args); err != nil {
		return err
	}
	return types.PrintResult(conf.PrevResult, conf.CNIVersion)
}

func cmdCheck(args *skel.CmdArgs) error {
	conf, uid, err := loadConf(args)
	if err != nil {
		return err
	}
	return attach(conf.RunDir, uid, args)
}

func cmdDel(args *skel.CmdArgs) error {
	conf, uid, err := loadConf(args)
	if err != nil {
		return err
	}
	if uid == "" {
		return nil // not a Kubernetes pod: ADD refused it, nothing to undo
	}
	reply, err := request(filepath.Join(conf.RunDir, "ctl.sock"), "detach "+uid, -1)
	if err != nil {
		// The daemon is gone (restarting, or uninstalled): the pod's program stays on its interface
		// and goes with its network namespace; a restarted daemon drops the record of a pod whose
		// namespace is gone; the pod's XSKs close with its processes.
		fmt.Fprintf(os.Stderr, "tickstack-xdp: DEL of pod %s: %v (nothing to detach)\n", uid, err)
		return nil
	}
	if reply != "ok" {
		return fmt.Errorf("tickstack-xdpd refused to detach pod %s: %s", uid, strings.TrimPrefix(reply, "error "))
	}
	return nil
}

func attach(runDir, uid string, args *skel.CmdArgs) error {
	if uid == "" {
		return fmt.Errorf("tickstack-xdp: CNI_ARGS has no K8S_POD_UID: the plugin serves Kubernetes pods (the container runtime passes it)")
	}
	if args.Netns == "" {
		return fmt.Errorf("tickstack-xdp: CNI_NETNS is empty")
	}
	ns, err := os.Open(args.Netns)
	if err != nil {
		return fmt.Errorf("tickstack-xdp: open the pod's network namespace: %w", err)
	}
	defer ns.Close()
	ctl := filepath.Join(runDir, "ctl.sock")
	reply, err := request(ctl, "attach "+uid+" "+args.IfName, int(ns.Fd()))
	if err != nil {
		return fmt.Errorf("tickstack-xdp: %v: is tickstack-xdpd running on this node with --run-dir %s (the chart's xdpd.enabled and xdpd.runDir)?", err, runDir)
	}
	if reply != "ok" {
		return fmt.Errorf("tickstack-xdpd refused to attach %s of pod %s: %s", args.IfName, uid, strings.TrimPrefix(reply, "error "))
	}
	return nil
}

// request sends one message (with fd as SCM_RIGHTS when fd >= 0) on a SOCK_SEQPACKET connection to
// path and returns the one reply.
func request(path, msg string, fd int) (string, error) {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(s)
	tv := unix.NsecToTimeval(ctlTimeout.Nanoseconds())
	_ = unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	_ = unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: path}); err != nil {
		return "", fmt.Errorf("connect %s: %w", path, err)
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	if err := unix.Sendmsg(s, []byte(msg), oob, nil, 0); err != nil {
		return "", fmt.Errorf("send to %s: %w", path, err)
	}
	buf := make([]byte, replyMax)
	n, _, _, _, err := unix.Recvmsg(s, buf, nil, 0)
	if err != nil {
		return "", fmt.Errorf("read the reply of %s: %w", path, err)
	}
	if n == 0 {
		return "", fmt.Errorf("%s closed without a reply", path)
	}
	return strings.TrimRight(string(buf[:n]), "\x00\n"), nil
}
