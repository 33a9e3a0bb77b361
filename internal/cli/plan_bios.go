package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bmc"
	"github.com/tickstack/tickstack/internal/plan"
)

// biosPlanTimeout bounds the Redfish reads for one node's BIOS plan.
const biosPlanTimeout = 30 * time.Second

// planBIOS reads, for each node the profile would hold, the BIOS attribute registry and current
// values over Redfish with the credentials the caller's kubeconfig user can read, and adds what
// the bios section would change. Nothing is PATCHed. When the BMC or its credentials cannot be
// reached from here, the node's BIOS part says it is not planned and why.
func planBIOS(ctx context.Context, c client.Client, p *tsv1.LatencyProfile, nodes []corev1.Node, pl *plan.Plan) {
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	for _, np := range pl.Nodes {
		if np.Action != plan.Apply && np.Action != plan.Unchanged && np.Action != plan.WaitFacts {
			continue
		}
		node := byName[np.Node]
		if node == nil {
			continue
		}
		pl.AddBIOS(np.Node, planNodeBIOS(ctx, c, p, node))
	}
}

func planNodeBIOS(ctx context.Context, c client.Client, p *tsv1.LatencyProfile, node *corev1.Node) *plan.BIOSPlan {
	name := bmc.ObjectName(node)
	obj := &tsv1.BMC{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return &plan.BIOSPlan{NotPlanned: fmt.Sprintf("no BMC object %q for the node (the operator would report NoBMC): create one (docs/bios.md)", name)}
		}
		return &plan.BIOSPlan{NotPlanned: fmt.Sprintf("cannot read BMC %s with your kubeconfig user: %s", name, apierrors.ReasonForError(err))}
	}
	ref := obj.Spec.CredentialsSecret
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsForbidden(err) {
			return &plan.BIOSPlan{BMC: obj.Spec.Endpoint, NotPlanned: fmt.Sprintf("your kubeconfig user may not read the BMC credentials (Secret %s/%s: forbidden), so the BIOS registry cannot be read from here; the operator validates the attributes before it stages anything and reports them in the node state's status.bios", ref.Namespace, ref.Name)}
		}
		return &plan.BIOSPlan{BMC: obj.Spec.Endpoint, NotPlanned: fmt.Sprintf("cannot read Secret %s/%s named by BMC %s: %s", ref.Namespace, ref.Name, name, apierrors.ReasonForError(err))}
	}
	cfg, err := bmc.ConfigFrom(obj, secret)
	if err != nil {
		return &plan.BIOSPlan{BMC: obj.Spec.Endpoint, NotPlanned: err.Error()}
	}
	cfg.Timeout = biosPlanTimeout
	ctx, cancel := context.WithTimeout(ctx, 2*biosPlanTimeout)
	defer cancel()
	bc, err := bmc.Connect(ctx, cfg)
	if err != nil {
		return &plan.BIOSPlan{BMC: obj.Spec.Endpoint, NotPlanned: "the BMC cannot be used from here: " + err.Error()}
	}
	defer bc.Close()
	wanted, err := bmc.WantedAttributes(p.Spec.BIOS, bc.Vendor())
	if err != nil {
		return &plan.BIOSPlan{BMC: bc.Endpoint(), Refused: "spec.bios.preset: " + err.Error()}
	}
	bp, err := bc.Plan(ctx, wanted)
	var verr *bmc.ValidationError
	switch {
	case errors.As(err, &verr):
		return &plan.BIOSPlan{BMC: bc.Endpoint(), Refused: verr.Error()}
	case err != nil:
		return &plan.BIOSPlan{BMC: bc.Endpoint(), NotPlanned: "reading the BIOS: " + err.Error()}
	}
	return plan.BIOSFromPlan(bc.Endpoint(), bp)
}
