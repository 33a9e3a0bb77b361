package bios

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/phase"
)

// BMCPolicy is what the operator accepts in a BMC object; cmd/manager sets it from its flags.
type BMCPolicy struct {
	// AllowInsecure accepts spec.tls.insecureSkipVerify and spec.allowPlainHTTP
	// (--allow-insecure-bmc); without it such an object is refused.
	AllowInsecure bool
	// SecretNamespace is the only namespace whose Secrets a BMC object may name: the operator's,
	// where its Role lets it read Secrets. Empty accepts any (the tests' own managers).
	SecretNamespace string
}

// bmcRefusal says why the operator will not use a BMC object ("" reason: it will). Pure.
func bmcRefusal(obj *tsv1.BMC, p BMCPolicy) (reason, msg string) {
	if ns := obj.Spec.CredentialsSecret.Namespace; p.SecretNamespace != "" && ns != p.SecretNamespace {
		return tsv1.ReasonBMCSecretNamespace, fmt.Sprintf("BMC %s spec.credentialsSecret.namespace is %s: the operator reads credentials Secrets only in its own namespace %s; move the Secret there and name that namespace",
			obj.Name, ns, p.SecretNamespace)
	}
	if field := insecureField(obj); field != "" && !p.AllowInsecure {
		return tsv1.ReasonBMCInsecureRefused, fmt.Sprintf("BMC %s %s is set, and the manager runs without --allow-insecure-bmc (chart value bios.allowInsecureBMC): give the BMC's CA (spec.tls.caBundle) or use systemRoots over https, or have a cluster administrator allow insecure BMCs",
			obj.Name, field)
	}
	return "", ""
}

// insecureField names the TLS opt-out a BMC object uses, or "".
func insecureField(obj *tsv1.BMC) string {
	switch {
	case obj.Spec.TLS != nil && obj.Spec.TLS.InsecureSkipVerify:
		return "spec.tls.insecureSkipVerify"
	case obj.Spec.AllowPlainHTTP:
		return "spec.allowPlainHTTP"
	}
	return ""
}

// bmcConditions computes a BMC object's conditions (Accepted, InsecureTransport). Pure.
func bmcConditions(obj *tsv1.BMC, p BMCPolicy) []metav1.Condition {
	conds := append([]metav1.Condition(nil), obj.Status.Conditions...)
	set := func(typ string, ok bool, reason, msg string) {
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&conds, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: obj.Generation})
	}
	if reason, msg := bmcRefusal(obj, p); reason != "" {
		set(tsv1.BMCAccepted, false, reason, msg)
	} else {
		set(tsv1.BMCAccepted, true, tsv1.ReasonBMCAccepted, "the operator uses this BMC for the BIOS settings of its node")
	}
	switch insecureField(obj) {
	case "spec.tls.insecureSkipVerify":
		set(tsv1.BMCInsecureTransport, true, tsv1.ReasonBMCInsecureSkipVerify,
			"spec.tls.insecureSkipVerify: any certificate is accepted, so anyone on the path to the BMC can take the credentials; give spec.tls.caBundle")
	case "spec.allowPlainHTTP":
		set(tsv1.BMCInsecureTransport, true, tsv1.ReasonBMCPlainHTTP,
			"spec.allowPlainHTTP: the BMC password crosses the network in clear; use an https endpoint")
	default:
		set(tsv1.BMCInsecureTransport, false, tsv1.ReasonBMCTransportVerified, "the BMC's certificate is verified")
	}
	return conds
}

// BMCReconciler writes each BMC object's status: whether the operator accepts it and whether it
// uses a TLS opt-out (docs/bios.md, "Trust").
type BMCReconciler struct {
	Client client.Client
	Policy BMCPolicy
}

// +kubebuilder:rbac:groups=tickstack.io,resources=bmcs/status,verbs=get;patch

// Reconcile sets the conditions of one BMC object.
func (r *BMCReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &tsv1.BMC{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := obj.DeepCopy()
	obj.Status.Conditions, obj.Status.ObservedGeneration = bmcConditions(obj, r.Policy), obj.Generation
	if err := phase.PatchStatus(ctx, r.Client, orig, obj, func(b *tsv1.BMC) any { return b.Status }); err != nil {
		return ctrl.Result{}, fmt.Errorf("BMC %s: %w", obj.Name, err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager reconciles BMC objects whose spec changed.
func (r *BMCReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&tsv1.BMC{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("bmc").
		Complete(r)
}
