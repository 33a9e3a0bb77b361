package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The labels the chart (templates/agent.yaml) and config/agent give the agent's pods: how release
// finds the agent of a node, in whatever namespace tickstack is installed.
const (
	agentNameLabel      = "app.kubernetes.io/name"
	agentNameValue      = "tickstack"
	agentComponentLabel = "app.kubernetes.io/component"
	agentComponentValue = "agent"
)

// ErrAgentRunning is why release refuses: the node's agent runs, and restores the node itself.
var ErrAgentRunning = errors.New("the node's agent is running")

// releaseNotice says what release does not do.
const releaseNotice = `The node stays tuned: nothing is restored on the host (no agent is left to do it). Its kernel
arguments, sysctls, IRQ placement and the rest stay as the profile set them (the agent's boot
unit, where installed, applies them again at every boot). The agent's journal on the host (by default
/var/lib/tickstack/tuning-journal.json) lists every original value, for a restore by hand or by
an agent that runs there again.`

// runningAgents lists the agent pods on node that run: phase Running, Ready, not being deleted.
// A pod on a node that stopped answering is marked not Ready by the node lifecycle controller.
func runningAgents(ctx context.Context, c client.Client, node string) ([]string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingLabels{agentNameLabel: agentNameValue, agentComponentLabel: agentComponentValue},
		client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil, fmt.Errorf("listing the agent pods on node %s: %w", node, err)
	}
	var running []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != node || !p.DeletionTimestamp.IsZero() || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}) {
			running = append(running, p.Namespace+"/"+p.Name)
		}
	}
	return running, nil
}

// ReleaseNode lets go of a node whose agent is gone for good, so that its profile can be deleted
// and tickstack uninstalled: it removes the tickstack.io/restore finalizer from the node's
// LatencyNodeState and deletes it (what the profile's finalizer and the uninstall guard wait for).
// It refuses while an agent pod runs on the node: that agent restores the node itself. Nothing is
// restored on the host; out says so.
func ReleaseNode(ctx context.Context, c client.Client, node string, out io.Writer) error {
	if node == "" {
		return errors.New("node release needs the node's name: tickstack node release NODE")
	}
	lns := &tsv1.LatencyNodeState{}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, lns); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s has no LatencyNodeState: tickstack holds nothing for it (kubectl get latencynodestates)", node)
		}
		return fmt.Errorf("reading the LatencyNodeState of %s: %w", node, err)
	}
	running, err := runningAgents(ctx, c, node)
	if err != nil {
		return err
	}
	if len(running) > 0 {
		return fmt.Errorf("%w: agent pod %s runs on node %s (Running and Ready): it restores the node itself once its profile is deleted (kubectl delete latencyprofile %s); release is for a node whose agent is gone for good",
			ErrAgentRunning, strings.Join(running, ", "), node, profileOr(lns, "PROFILE"))
	}

	if controllerutil.ContainsFinalizer(lns, tsv1.RestoreFinalizer) {
		orig := lns.DeepCopy()
		controllerutil.RemoveFinalizer(lns, tsv1.RestoreFinalizer)
		if err := c.Patch(ctx, lns, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("removing the finalizer %s from LatencyNodeState %s: %w (run the command again)", tsv1.RestoreFinalizer, node, err)
		}
		fmt.Fprintf(out, "latencynodestate/%s: finalizer %s removed\n", node, tsv1.RestoreFinalizer)
	}
	if lns.DeletionTimestamp.IsZero() {
		if err := c.Delete(ctx, lns); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting LatencyNodeState %s: %w", node, err)
		}
	}
	fmt.Fprintf(out, "latencynodestate/%s deleted: node %s is released\n\n%s\n", node, node, releaseNotice)
	return notesAfterRelease(ctx, c, node, lns, out)
}

// profileOr is the node state's profile, or def when it names none.
func profileOr(lns *tsv1.LatencyNodeState, def string) string {
	if lns.Spec.Profile.Name != "" {
		return lns.Spec.Profile.Name
	}
	return def
}

// notesAfterRelease says what else of tickstack's is left on the node and what comes next: a
// profile that still selects the node gets a new node state (which no agent serves), a cordon or
// taint the agent left stays.
func notesAfterRelease(ctx context.Context, c client.Client, node string, lns *tsv1.LatencyNodeState, out io.Writer) error {
	var notes []string
	if name := lns.Spec.Profile.Name; name != "" {
		p := &tsv1.LatencyProfile{}
		switch err := c.Get(ctx, client.ObjectKey{Name: name}, p); {
		case err == nil && p.DeletionTimestamp.IsZero():
			notes = append(notes, fmt.Sprintf("LatencyProfile %s still selects node %s: the operator makes a new node state for it, which no agent serves; "+
				"take the node out of the profile's spec.nodeSelector, or delete the profile, before uninstalling", name, node))
		case client.IgnoreNotFound(err) != nil:
			return fmt.Errorf("reading LatencyProfile %s: %w", name, err)
		}
	}
	n := &corev1.Node{}
	switch err := c.Get(ctx, client.ObjectKey{Name: node}, n); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading node %s: %w", node, err)
	default:
		if _, ok := n.Annotations[tsv1.CordonedAnnotation]; ok && n.Spec.Unschedulable {
			notes = append(notes, fmt.Sprintf("node %s is still cordoned by the agent (%s): kubectl uncordon %s when it may take pods again", node, tsv1.CordonedAnnotation, node))
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == tsv1.TuningPendingTaint }) {
			notes = append(notes, fmt.Sprintf("node %s keeps the taint %s, which keeps latency pods off it: kubectl taint node %s %s- to remove it", node, tsv1.TuningPendingTaint, node, tsv1.TuningPendingTaint))
		}
	}
	for _, n := range notes {
		if _, err := fmt.Fprintf(out, "\nNote: %s.\n", n); err != nil {
			return err
		}
	}
	return nil
}

// NewNodeCmd is `tickstack node`: break-glass for nodes (release).
func NewNodeCmd(newClient func() (client.Client, error)) *cobra.Command {
	node := &cobra.Command{
		Use:   "node",
		Short: "Act on one node's tickstack state (break-glass)",
	}
	node.AddCommand(&cobra.Command{
		Use:   "release NODE",
		Short: "Let go of a node whose agent is gone for good, so that its profile can be deleted and tickstack uninstalled; the node stays tuned",
		Long: `Removes the tickstack.io/restore finalizer from the node's LatencyNodeState and deletes it: what
a deleted profile (finalizer tickstack.io/node-states) and the uninstall guard wait for, and what
the node's agent would have removed after restoring the host. Refused while an agent pod runs on
the node (Running and Ready): that agent restores the node itself. Nothing is restored on the host:
the node stays tuned (docs/install.md, "A node whose agent is gone for good").`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			return ReleaseNode(cmd.Context(), c, args[0], cmd.OutOrStdout())
		},
	})
	return node
}
