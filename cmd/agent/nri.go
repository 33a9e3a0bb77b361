package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/nriplugin"
)

// nriCommand is the first argument that runs the agent binary as the node's NRI plugin
// (`tickstack-agent nri-plugin`, the agent DaemonSet's nri-plugin container; docs/agent.md
// "Per-pod controls"): no API server, no Kubernetes client, only the runtime's NRI socket and the
// host files of the controls.
const nriCommand = "nri-plugin"

// runNRIPlugin parses the plugin's flags and serves the runtime's NRI socket until it closes.
func runNRIPlugin(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet(nriCommand, flag.ContinueOnError)
	hostRoot := fs.String("host-root", "/", "where the host's / is visible (/host in the DaemonSet)")
	socket := fs.String("socket", nriplugin.DefaultSocketPath, "the runtime's NRI socket, a path in this container")
	journal := fs.String("journal-path", nriplugin.DefaultJournalPath, "the plugin's journal of originals and claims, on the host (below --host-root)")
	policy := fs.String("policy-path", nriplugin.DefaultPolicyPath, "the node policy the agent writes, on the host (below --host-root)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h := &host.Host{Root: *hostRoot}
	p := &nriplugin.Plugin{
		Engine:     &nriplugin.Engine{Host: h, JournalPath: h.Path(*journal)},
		PolicyPath: h.Path(*policy),
		Log:        slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	}
	if !filepath.IsAbs(*socket) {
		return fmt.Errorf("--socket %q: give an absolute path", *socket)
	}
	p.Log.Info("nri plugin starting", "socket", *socket, "journal", p.Engine.JournalPath, "policy", p.PolicyPath)
	return p.Run(ctx, *socket)
}
