package network

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/render"
)

// The network controller's default names (SetupControllers sets them).
const (
	// DefaultDevicePluginConfigMap is the SR-IOV device plugin's ConfigMap.
	DefaultDevicePluginConfigMap = "sriovdp-config"
	// DefaultNodeFeatureRule is the NodeFeatureRule.
	DefaultNodeFeatureRule = "tickstack"
)

// NetworkOptions configure what the network controller renders and where.
type NetworkOptions struct {
	// Namespace holds the device plugin ConfigMap and the NetworkAttachmentDefinitions of profiles
	// that name no namespace (the operator's namespace).
	Namespace string
	// ResourcePrefix is the device plugin's resource prefix (default tickstack.io).
	ResourcePrefix string
	// DevicePluginConfigMap is the name of the SR-IOV device plugin's ConfigMap (default sriovdp-config).
	DevicePluginConfigMap string
	// DevicePluginDaemonSet names the device plugin's DaemonSet in Namespace, when tickstack deploys
	// it (the chart's sriovDevicePlugin.enabled): its pod template gets the configuration's hash,
	// so the pods restart once on a change. Empty: a plugin deployed otherwise is not touched.
	DevicePluginDaemonSet string
	// NodeFeatureRule is the name of the NodeFeatureRule (default tickstack).
	NodeFeatureRule string
	// XDPRunDir is the node daemon tickstack-xdpd's run directory, which bypass groups' attachments
	// give their tickstack-xdp CNI plugin (default /run/tickstack/xdp).
	XDPRunDir string
}

// NetworkReconciler renders, from every LatencyProfile, the SR-IOV device plugin's ConfigMap, the
// profiles' NetworkAttachmentDefinitions and a node-feature-discovery NodeFeatureRule, and keeps
// them as rendered. NADs are owned by their profile (garbage collected with it, and deleted
// explicitly when the profile goes, before its finalizer is released); the ConfigMap and the rule
// cover all profiles and belong to the operator. A kind whose CRD is not installed (no Multus, no
// NFD) is skipped, with a log line at start.
type NetworkReconciler struct {
	Client client.Client
	// APIReader reads the device plugin's DaemonSet (one object, not worth a cache of every
	// DaemonSet), and its ConfigMap when one exists without the managed-by label the manager's
	// cache selects; SetupControllers gives it the manager's.
	APIReader client.Reader
	Options   NetworkOptions
	// nads and nfd say whether those CRDs were installed when the controller started.
	nads, nfd bool
}

// +kubebuilder:rbac:groups=tickstack.io,resources=latencyprofiles,verbs=get;list;watch
// The device plugin's ConfigMap is in the operator's namespace: it writes ConfigMaps only there.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=system,resources=configmaps,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,resources=nodefeaturerules,verbs=get;list;watch;create;update;patch;delete

// Reconcile renders one profile's NADs, then the objects covering every profile. A request without
// a name (from a change to those objects) re-renders only the latter.
func (r *NetworkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var errs []error
	if req.Name != "" {
		if err := r.reconcileNADs(ctx, req.Name); err != nil {
			errs = append(errs, err)
		}
	}
	var list tsv1.LatencyProfileList
	if err := r.Client.List(ctx, &list); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing profiles: %w", err)
	}
	live := make([]tsv1.LatencyProfile, 0, len(list.Items))
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	phases := []func(context.Context, []tsv1.LatencyProfile) error{r.reconcileDevicePluginConfig, r.reconcileNodeFeatureRule}
	for _, phase := range phases {
		if err := phase(ctx, live); err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// reconcileNADs creates or updates the profile's NADs and deletes the ones it no longer renders
// (all of them once the profile is being deleted or gone).
func (r *NetworkReconciler) reconcileNADs(ctx context.Context, name string) error {
	if !r.nads {
		return nil
	}
	profile := &tsv1.LatencyProfile{}
	var want []*nadv1.NetworkAttachmentDefinition
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, profile); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading profile %s: %w", name, err)
		}
		profile = nil
	}
	if profile != nil && profile.DeletionTimestamp.IsZero() {
		var err error
		if want, err = render.NetworkAttachments(profile, r.Options.ResourcePrefix, r.Options.Namespace, r.Options.XDPRunDir); err != nil {
			return err
		}
	}
	keep := map[types.NamespacedName]bool{}
	var errs []error
	for _, nad := range want {
		keep[client.ObjectKeyFromObject(nad)] = true
		if err := r.applyNAD(ctx, profile, nad); err != nil {
			errs = append(errs, err)
		}
	}
	var have nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &have, client.MatchingLabels{tsv1.ProfileLabel: name, render.ManagedByLabel: render.ManagedBy}); err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing the NADs of profile %s: %w", name, err))...)
	}
	for i := range have.Items {
		nad := &have.Items[i]
		if keep[client.ObjectKeyFromObject(nad)] {
			continue
		}
		if err := r.Client.Delete(ctx, nad); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting NAD %s/%s: %w", nad.Namespace, nad.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (r *NetworkReconciler) applyNAD(ctx context.Context, owner *tsv1.LatencyProfile, want *nadv1.NetworkAttachmentDefinition) error {
	got := &nadv1.NetworkAttachmentDefinition{ObjectMeta: want.ObjectMeta}
	got.ObjectMeta = *want.ObjectMeta.DeepCopy()
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, got, func() error {
		for k, v := range want.Labels {
			got.Labels = shared.SetKey(got.Labels, k, v)
		}
		for k, v := range want.Annotations {
			got.Annotations = shared.SetKey(got.Annotations, k, v)
		}
		if _, ok := want.Annotations[render.ResourceNameAnnotation]; !ok {
			delete(got.Annotations, render.ResourceNameAnnotation)
		}
		got.Spec = want.Spec
		return controllerutil.SetControllerReference(owner, got, r.Client.Scheme())
	})
	if err != nil {
		return fmt.Errorf("applying NAD %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}

func (r *NetworkReconciler) reconcileDevicePluginConfig(ctx context.Context, profiles []tsv1.LatencyProfile) error {
	want, conflicts := render.DevicePluginConfigMap(profiles, r.Options.ResourcePrefix, r.Options.DevicePluginConfigMap, r.Options.Namespace)
	if want == nil {
		return conflicts
	}
	if conflicts != nil {
		// The other pools are still written; the conflict is for the profile's author to fix.
		logf.FromContext(ctx).Error(conflicts, "device plugin resource name conflict")
	}
	got := &corev1.ConfigMap{ObjectMeta: *want.ObjectMeta.DeepCopy()}
	mutate := func() error {
		got.Labels = shared.SetKey(got.Labels, render.ManagedByLabel, render.ManagedBy)
		got.Data = want.Data
		return nil
	}
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, got, mutate)
	if apierrors.IsAlreadyExists(err) {
		// The manager's cache holds only ConfigMaps labelled as the operator's
		// (controllers.CacheOptions): this one was made without the label, by hand or by another
		// tool. Taken over as before the cache's selector: labelled, and its data rendered.
		got = &corev1.ConfigMap{}
		if err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), got); err == nil {
			orig := got.DeepCopy()
			_ = mutate()
			err = r.Client.Patch(ctx, got, client.MergeFrom(orig))
		}
	}
	if err != nil {
		return fmt.Errorf("applying ConfigMap %s/%s: %w", want.Namespace, want.Name, err)
	}
	return r.rollDevicePlugin(ctx, want.Data[render.DevicePluginConfigKey])
}

// rollDevicePlugin stamps the configuration's hash on the device plugin DaemonSet's pod template
// when it differs: the DaemonSet controller then replaces each pod once, and the new pods read the
// new configuration. An unchanged configuration writes nothing.
func (r *NetworkReconciler) rollDevicePlugin(ctx context.Context, config string) error {
	if r.Options.DevicePluginDaemonSet == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(config))
	hash := hex.EncodeToString(sum[:8])
	ds := &appsv1.DaemonSet{}
	key := types.NamespacedName{Namespace: r.Options.Namespace, Name: r.Options.DevicePluginDaemonSet}
	if err := r.APIReader.Get(ctx, key, ds); err != nil {
		return fmt.Errorf("reading the device plugin DaemonSet %s (--device-plugin-daemonset): %w", key, err)
	}
	if ds.Spec.Template.Annotations[tsv1.DevicePluginConfigAnnotation] == hash {
		return nil
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`,
		tsv1.DevicePluginConfigAnnotation, hash)))
	if err := r.Client.Patch(ctx, ds, patch); err != nil {
		return fmt.Errorf("rolling the device plugin DaemonSet %s to configuration %s: %w", key, hash, err)
	}
	logf.FromContext(ctx).Info("device plugin configuration changed: rolling its DaemonSet", "daemonset", key, "config", hash)
	return nil
}

func (r *NetworkReconciler) reconcileNodeFeatureRule(ctx context.Context, profiles []tsv1.LatencyProfile) error {
	if !r.nfd {
		return nil
	}
	want := render.NodeFeatureRule(profiles, r.Options.NodeFeatureRule)
	got := &nfdv1alpha1.NodeFeatureRule{ObjectMeta: *want.ObjectMeta.DeepCopy()}
	if _, err := controllerutil.CreateOrPatch(ctx, r.Client, got, func() error {
		got.Labels = shared.SetKey(got.Labels, render.ManagedByLabel, render.ManagedBy)
		if !apiequality.Semantic.DeepEqual(got.Spec, want.Spec) {
			got.Spec = want.Spec
		}
		return nil
	}); err != nil {
		return fmt.Errorf("applying NodeFeatureRule %s: %w", want.Name, err)
	}
	return nil
}

// installed reports whether the API server serves the object's kind.
func installed(mgr ctrl.Manager, obj client.Object) (bool, error) {
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return false, err
	}
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if apimeta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("looking up %s: %w", gvk, err)
	}
	return true, nil
}

// SetupWithManager watches profiles and the rendered objects (to undo changes made by hand).
// NetworkAttachmentDefinitions and NodeFeatureRules are handled only when their CRDs are installed.
func (r *NetworkReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Options.Namespace == "" {
		return fmt.Errorf("network controller: the operator namespace is not set")
	}
	log := mgr.GetLogger().WithName("network")
	var err error
	if r.nads, err = installed(mgr, &nadv1.NetworkAttachmentDefinition{}); err != nil {
		return err
	}
	if r.nfd, err = installed(mgr, &nfdv1alpha1.NodeFeatureRule{}); err != nil {
		return err
	}
	if !r.nads {
		log.Info("NetworkAttachmentDefinition CRD not installed (no Multus): profiles' networks are not rendered")
	}
	if !r.nfd {
		log.Info("NodeFeatureRule CRD not installed (no node-feature-discovery): no feature rule is rendered")
	}
	aggregate := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{}}
	})
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[render.ManagedByLabel] == render.ManagedBy })
	b := ctrl.NewControllerManagedBy(mgr).
		For(&tsv1.LatencyProfile{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&corev1.ConfigMap{}, aggregate, builder.WithPredicates(ours, predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == r.Options.DevicePluginConfigMap && o.GetNamespace() == r.Options.Namespace
		})))
	if r.nads {
		b = b.Owns(&nadv1.NetworkAttachmentDefinition{})
	}
	if r.nfd {
		b = b.Watches(&nfdv1alpha1.NodeFeatureRule{}, aggregate, builder.WithPredicates(ours))
	}
	return b.Named("network").Complete(r)
}
