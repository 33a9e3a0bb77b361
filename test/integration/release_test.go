package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/bench"
	"github.com/tickstack/tickstack/internal/cli"
)

// TestReleaseNodeWhoseAgentIsGone runs the operator and one agent; the profile tunes the node
// (a sysctl in its host-root tree). The agent then stops for good while its pod still shows
// Running and Ready: the profile's deletion hangs on the node state's restore finalizer, and
// `tickstack node release` refuses, naming the pod. Once the pod is no longer Ready (its node
// stopped answering), release removes the finalizer and the node state: the profile goes, so no
// LatencyProfile and no LatencyNodeState is left for the uninstall guard to wait for. The host
// keeps its tuning, as release says.
func TestReleaseNodeWhoseAgentIsGone(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	c := startOperator(t, &bench.SyncBuffer{}, 5*time.Second)

	role := agenttest.Name("release")
	node := agenttest.Name("rel")
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"tickstack.io/role": role}}}); err != nil {
		t.Fatal(err)
	}
	a := agenttest.NewTreeAgent(t, node)
	stopAgent := agenttest.StartAgent(t, restCfg, a.R, nil)
	// The agent's pod as the DaemonSet runs it (no kubelet: marked running and ready by hand).
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agenttest.Name("relsys")}}); err != nil {
		t.Fatal(err)
	}
	pod := runningPod(t, c, agenttest.Name("relsys"), "tickstack-agent-x1", node,
		map[string]string{"app.kubernetes.io/name": "tickstack", "app.kubernetes.io/component": "agent"}, nil, nil)

	profile := &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: agenttest.Name("release")},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tickstack.io/role": role}},
			Sysctls:      map[string]tsv1.SysctlValue{"vm.stat_interval": "10"},
		},
	}
	if err := c.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}
	lns := &tsv1.LatencyNodeState{}
	g.Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: node}, lns); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(lns.Status.Conditions, tsv1.NodeApplied) || !controllerutil.ContainsFinalizer(lns, tsv1.RestoreFinalizer) {
			return fmt.Errorf("node state: finalizers %v, conditions %+v", lns.Finalizers, lns.Status.Conditions)
		}
		return nil
	}).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
	sysctl := filepath.Join(a.Root, "proc/sys/vm/stat_interval")
	if b, err := os.ReadFile(sysctl); err != nil || strings.TrimSpace(string(b)) != "10" {
		t.Fatalf("the profile's sysctl on the host: %q, %v", b, err)
	}

	// The agent is gone; its pod still reads Running and Ready.
	stopAgent()
	var out bytes.Buffer
	err := cli.ReleaseNode(ctx, c, node, &out)
	if !errors.Is(err, cli.ErrAgentRunning) || !strings.Contains(err.Error(), pod.Namespace+"/"+pod.Name) {
		t.Fatalf("release with the agent's pod Ready: %v, want a refusal naming the pod", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, lns); err != nil || !controllerutil.ContainsFinalizer(lns, tsv1.RestoreFinalizer) {
		t.Fatalf("a refused release changed the node state: %v, finalizers %v", err, lns.Finalizers)
	}

	// The profile's deletion waits for the restore no agent will do.
	if err := c.Delete(ctx, profile); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: node}, lns); err != nil {
			return err
		}
		if lns.DeletionTimestamp.IsZero() {
			return errors.New("the node state is not being deleted yet")
		}
		return nil
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
	if err := c.Get(ctx, client.ObjectKeyFromObject(profile), &tsv1.LatencyProfile{}); err != nil {
		t.Fatalf("the profile went while its node state waits for a restore: %v", err)
	}

	// The node stopped answering: its pods are no longer Ready. Release goes through.
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeNotReady"}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := cli.ReleaseNode(ctx, c, node, &out); err != nil {
		t.Fatalf("release with no agent running: %v\n%s", err, out.String())
	}
	for _, want := range []string{"finalizer " + tsv1.RestoreFinalizer + " removed", "released", "The node stays tuned: nothing is restored on the host"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("release's output lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("release said:\n%s", out.String())

	// Nothing is left for the uninstall guard: no node state, and the profile went once its
	// finalizer had no node state to wait for.
	g.Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &tsv1.LatencyNodeState{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("node state: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(profile), &tsv1.LatencyProfile{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("profile: %v", err)
		}
		return nil
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
	if b, err := os.ReadFile(sysctl); err != nil || strings.TrimSpace(string(b)) != "10" {
		t.Errorf("release must not touch the host: vm.stat_interval %q, %v (want the profile's 10)", b, err)
	}

	// A node without a node state: nothing to release, said plainly.
	if err := cli.ReleaseNode(ctx, c, node, &out); err == nil || !strings.Contains(err.Error(), "has no LatencyNodeState") {
		t.Errorf("releasing a released node: %v", err)
	}
}
