package phase

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PatchStatus is a reconcile's one status write: a patch of obj's status subresource from orig
// (the object as the reconcile read it), sent only when status(obj) differs from status(orig): an
// empty patch still makes the API server read, decode and validate the whole object. status picks
// what this reconciler owns (the whole status, or one field of a status others write too). An
// object deleted meanwhile is not an error. The patch is a JSON merge patch unless opts say
// otherwise.
func PatchStatus[T client.Object](ctx context.Context, c client.Client, orig, obj T, status func(T) any, opts ...PatchOption) error {
	if equality.Semantic.DeepEqual(status(orig), status(obj)) {
		return nil
	}
	patch := client.MergeFrom(orig)
	for _, o := range opts {
		patch = o(orig)
	}
	if err := c.Status().Patch(ctx, obj, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// PatchOption chooses the patch PatchStatus sends.
type PatchOption func(orig client.Object) client.Patch

// StrategicMerge sends a strategic merge patch (built-in kinds only), so that a list merged by key
// (a Node's conditions, by type) carries only the entries this reconciler changed, and another
// writer's entries patched meanwhile are left alone.
func StrategicMerge(orig client.Object) client.Patch { return client.StrategicMergeFrom(orig) }

// Join adds err, the deferred status patch's error, to *reterr, the Reconcile's named result.
func Join(reterr *error, err error) {
	if err != nil {
		*reterr = kerrors.NewAggregate([]error{*reterr, err})
	}
}
