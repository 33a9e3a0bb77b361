// Package manifests checks that the kustomize install (config/default: the operator and the node
// side) builds, that every object in it is accepted by a real kube-apiserver, and that the agent's
// own-node policy is enforced.
package manifests

import (
	"context"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// clusterScoped kinds carry no namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

func TestDefaultInstallIsAcceptedByTheAPIServer(t *testing.T) {
	objs := kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default"))
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if !clusterScoped[o.GetKind()] && o.GetNamespace() != "tickstack-system" {
			t.Errorf("%s %s is in namespace %q, want tickstack-system", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Deployment", "DaemonSet", "ClusterRole", "ServiceAccount", "Service", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy"} {
		if kinds[k] == 0 {
			t.Errorf("config/default has no %s", k)
		}
	}

	_, c := kubetest.New(t, kubetest.Options{NoCRDs: true})
	ctx := context.Background()
	// Namespaces and CRDs for real (the rest depends on them), everything else as a server-side dry run.
	for _, o := range objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			if err := c.Create(ctx, o.DeepCopy()); err != nil {
				t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		if err := c.Create(ctx, o.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("the API server refuses %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}
