package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/qualify"
)

// newQualifyCmd is `tickstack qualify`: run on the node (as root, or with CAP_NET_ADMIN,
// CAP_NET_RAW, CAP_BPF and CAP_SYS_ADMIN: the trials attach XDP and bind AF_XDP sockets), it
// qualifies one interface for the bypass stack (docs/install.md "Qualifying a node's NIC").
func newQualifyCmd() *cobra.Command {
	var o qualify.Options
	var peer, peerIface, peerAddr, output, workDir string
	var peerTimeout time.Duration
	allowDegraded := false
	cmd := &cobra.Command{
		Use:   "qualify --interface IF [--peer HOST[:PORT]]",
		Short: "Qualify a node's NIC or VF for the bypass stack: driver, queues, offloads, XDP and zero-copy tried, conformance and ping-pong; exit 2 if unsupported, 3 if degraded",
		Long: `Runs on the node that holds the interface, as root (the trials attach an XDP program and
bind AF_XDP sockets: CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF, CAP_SYS_ADMIN). Reports the driver and
firmware, channels, ntuple and RSS, hardware timestamping, the device's interrupts and their NUMA
locality; tries native XDP, generic XDP and AF_XDP zero-copy with the data plane itself
(TICKSTACK_XDP_MODE); with a peer (--peer-interface: a second VF of the port, moved into a network
namespace of its own for the run, a reflector served there, moved back; or --peer: a
"tickstack-bench --role=server" on another node) runs conformance cases and a kernel vs bypass UDP
ping-pong over the interface. Verdict: Supported (exit 0), Degraded (exit 3, 0 with
--allow-degraded) or Unsupported (exit 2), each reason listed; exit 1 on an error.
  tickstack qualify --interface ens1f0v1 --peer-interface ens1f0v2 --peer-address 198.18.0.2/24 > qualify.txt
  tickstack qualify --interface ens1f0v1 --peer 198.18.0.2 -o json > qualify.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" && output != "text" {
				return fmt.Errorf("-o %q: use json or text", output)
			}
			dir, remove, err := bench.WorkDir(workDir, "tickstack-qualify-")
			if err != nil {
				return err
			}
			defer remove()
			o.WorkDir = dir
			o.Logf = func(format string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", a...) }
			if err := o.Check(); err != nil {
				return err
			}
			if peerIface != "" || peerAddr != "" {
				if peer != "" || peerIface == "" || peerAddr == "" {
					return fmt.Errorf("give --peer HOST, or --peer-interface IF with --peer-address CIDR (a second VF of the port), not both")
				}
				launcher, err := o.Tools.FindLauncher()
				if err != nil {
					return err
				}
				self, err := os.Executable()
				if err != nil {
					return err
				}
				ip, _, _ := net.ParseCIDR(peerAddr)
				argv := []string{self, "qualify-peer", "--listen", ip.String(), "--launcher", launcher}
				if o.Tools.Sockperf != "" {
					argv = append(argv, "--sockperf", o.Tools.Sockperf)
				}
				pn, err := qualify.StartPeerNamespace(cmd.Context(), fmt.Sprintf("tickstack-qualify-%d", os.Getpid()), peerIface, peerAddr, argv, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer pn.Close()
				peer = pn.Address
			}
			if peer != "" {
				addr := peer
				if _, _, err := net.SplitHostPort(addr); err != nil {
					addr = net.JoinHostPort(addr, strconv.Itoa(judge.DefaultControlPort))
				}
				rc, err := bench.DialReflector(cmd.Context(), addr, peerTimeout)
				if err != nil {
					return fmt.Errorf("--peer %s: %w", peer, err)
				}
				defer rc.Close()
				o.Reflector = rc
			}
			r, err := qualify.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else if err := qualify.WriteText(cmd.OutOrStdout(), r); err != nil {
				return err
			}
			if r.Verdict == tsv1.QualifySupported || r.Verdict == tsv1.QualifyDegraded && allowDegraded {
				return nil
			}
			return &qualify.VerdictError{Verdict: r.Verdict}
		},
	}
	cmd.Flags().StringVarP(&o.Interface, "interface", "i", "", "the NIC or VF to qualify (required)")
	cmd.Flags().StringVar(&peer, "peer", "", "the reflector (tickstack-bench --role=server) to run the conformance cases and ping-pong against: HOST or HOST:PORT")
	cmd.Flags().StringVar(&peerIface, "peer-interface", "", "instead of --peer: a second interface of the node (a second VF of the same port), moved into a network namespace of its own for the run, with a reflector there, and moved back")
	cmd.Flags().StringVar(&peerAddr, "peer-address", "", "with --peer-interface: its IPv4 address and prefix, in the qualified interface's subnet (198.18.0.2/24)")
	cmd.Flags().DurationVar(&peerTimeout, "peer-timeout", 30*time.Second, "how long to wait for the peer to answer")
	cmd.Flags().StringVarP(&output, "output", "o", "", "json: the report as data (default: text)")
	cmd.Flags().Int32Var(&o.MessageSize, "size", 64, "ping-pong message size in bytes, 14..1472")
	cmd.Flags().DurationVar(&o.Duration, "duration", 2*time.Second, "each stack's ping-pong, 1s..60s")
	cmd.Flags().StringVar(&o.CPUs, "cpus", "", "pin the ping-pong client to these CPUs (taskset -c)")
	cmd.Flags().StringVar(&o.Tools.Launcher, "launcher", "", "the bypass launcher tickstack-run (default: dataplane/build, beside this program, then PATH); tickstack-stats and conform are taken beside it")
	cmd.Flags().StringVar(&o.Tools.Sockperf, "sockperf", "", "sockperf (default: on PATH)")
	cmd.Flags().IntVar(&o.BasePort, "base-port", 12600, "first of the ports the trials, the conformance peer and sockperf use")
	cmd.Flags().StringVar(&workDir, "work-dir", "", "keep the trials' logs, transcripts and statistics here (default: a temporary directory, removed)")
	cmd.Flags().BoolVar(&allowDegraded, "allow-degraded", false, "exit 0 on a Degraded verdict")
	return cmd
}

// newQualifyPeerCmd is the reflector `tickstack qualify --peer-interface` runs in the peer's
// namespace (hidden: it is this program re-run there by "ip netns exec").
func newQualifyPeerCmd() *cobra.Command {
	var listen string
	var tools bench.Tools
	cmd := &cobra.Command{
		Use:    "qualify-peer --listen IP",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if net.ParseIP(listen) == nil {
				return fmt.Errorf("--listen %q: an IP of this namespace", listen)
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(listen, strconv.Itoa(judge.DefaultControlPort)))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "qualify peer: listening on %s\n", ln.Addr())
			r := &bench.Reflector{Tools: tools, DataAddress: listen, Once: true,
				Logf: func(format string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), "qualify peer: "+format+"\n", a...) }}
			return r.Serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "the address to serve on")
	cmd.Flags().StringVar(&tools.Launcher, "launcher", "", "the bypass launcher")
	cmd.Flags().StringVar(&tools.Sockperf, "sockperf", "", "sockperf")
	return cmd
}
