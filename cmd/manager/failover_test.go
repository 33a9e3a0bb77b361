package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
	tswebhook "github.com/tickstack/tickstack/internal/webhook"
)

// freeAddress is a loopback address no one listens on now.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestFollowerServesWebhooksAndIsReady: of two replicas with leader election, the one that is not
// elected serves the admission webhooks all the same and reports ready (addChecks, as cmd/manager
// wires it): the API server's call for a LatencyProfile is answered by it, while the other replica
// leads. Only the follower serves webhooks here, so a refusal by the webhook is its answer.
func TestFollowerServesWebhooksAndIsReady(t *testing.T) {
	env, c := kubetest.New(t, kubetest.Options{Webhooks: true})
	ctx, cancel := context.WithCancel(context.Background())
	const ns = "default"
	start := func(name string, webhooks bool, probe string) ctrl.Manager {
		o := ctrl.Options{
			Scheme: kubetest.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: probe,
			Controller:     config.Controller{SkipNameValidation: ptr.To(true)},
			LeaderElection: true, LeaderElectionID: leaderElectionID, LeaderElectionNamespace: ns,
			LeaseDuration: ptr.To(10 * time.Second), RenewDeadline: ptr.To(8 * time.Second), RetryPeriod: ptr.To(500 * time.Millisecond),
		}
		if webhooks {
			o.WebhookServer = env.WebhookServer()
		}
		mgr, err := ctrl.NewManager(env.Config, o)
		if err != nil {
			t.Fatal(err)
		}
		if webhooks {
			if err := tswebhook.SetupLatencyProfileWebhook(mgr); err != nil {
				t.Fatal(err)
			}
		}
		if err := addChecks(mgr, webhooks, nil); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("replica %s: %v", name, err)
			}
		})
		return mgr
	}
	leader := start("leader", false, "0")
	select {
	case <-leader.Elected():
	case <-time.After(60 * time.Second):
		t.Fatal("the first replica was not elected within 60s")
	}
	probe := freeAddress(t)
	follower := start("follower", true, probe)

	ready := func() error {
		resp, err := http.Get("http://" + probe + "/readyz?verbose")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "webhook-server ok") {
			return fmt.Errorf("readyz %d: %s", resp.StatusCode, body)
		}
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for err := ready(); err != nil; err = ready() {
		if time.Now().After(deadline) {
			t.Fatalf("the follower is not ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case <-follower.Elected():
		t.Fatal("the follower was elected while the leader runs")
	default:
	}

	// The webhook's own rule (reserved and isolated CPUs disjoint, which the CRD's rules cannot
	// check: they do not parse CPU lists) refuses this profile: only the follower can have answered.
	bad := &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "follower-answers"},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tickstack.io/role": "trading"}},
			CPU:          &tsv1.CPUSpec{Reserved: "0-1", Isolated: "1-3"},
		},
	}
	err := c.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), `admission webhook "vlatencyprofile.tickstack.io" denied the request`) {
		t.Fatalf("creating a profile the webhook refuses, with the follower serving: %v", err)
	}
	t.Logf("answered by the follower: %v", err)
}
