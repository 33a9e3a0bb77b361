package webhook

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The agent drains its own node before a reboot or a kubelet restart, through the eviction API
// (which keeps PodDisruptionBudgets). RBAC grants pods/eviction create for every pod or none, and
// an admission policy sees only the Eviction, not the pod: so this webhook, called only for the
// agent's service account (matchConditions), reads the pod and admits the eviction only when the
// pod runs on the node bound into the agent's token (authentication.kubernetes.io/node-name). A
// compromised agent can evict the pods of its own node, which as the node's root it could kill
// anyway, and no other node's (docs/security.md).

// nodeNameExtra is the key under which the API server passes the node a pod-bound service account
// token was issued on.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// +kubebuilder:webhook:path=/validate--v1-pod-eviction,mutating=false,failurePolicy=fail,sideEffects=None,groups="",resources=pods/eviction,verbs=create,versions=v1,name=vpodeviction.tickstack.io,admissionReviewVersions=v1,timeoutSeconds=10,patch=`{"matchConditions":[{"name":"is-tickstack-agent","expression":"request.userInfo.username == 'system:serviceaccount:tickstack-system:tickstack-agent'"}]}`

// The eviction check reads the pod an agent evicts.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get

// EvictionWebhookPath is where the eviction check is served.
const EvictionWebhookPath = "/validate--v1-pod-eviction"

// EvictionValidator admits an agent's eviction of a pod on the agent's own node only.
type EvictionValidator struct {
	// Reader reads the pod (the API server, not a cache: the manager watches no pods).
	Reader client.Reader
}

// SetupEvictionWebhook registers the eviction check on the manager's webhook server.
func SetupEvictionWebhook(srv interface {
	Register(string, http.Handler)
}, r client.Reader) {
	srv.Register(EvictionWebhookPath, &admission.Webhook{Handler: &EvictionValidator{Reader: r}})
}

// Handle admits or refuses one eviction by an agent.
func (v *EvictionValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	nodes := req.UserInfo.Extra[nodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		return admission.Denied(fmt.Sprintf("%s evicts only pods of its own node, and its token names no node (%s): use the token the kubelet mounts into the agent's pod", req.UserInfo.Username, nodeNameExtra))
	}
	node := nodes[0]
	pod := &corev1.Pod{}
	if err := v.Reader.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return admission.Allowed("no such pod: the eviction API answers 404")
		}
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("reading pod %s/%s: %w", req.Namespace, req.Name, err))
	}
	if pod.Spec.NodeName != node {
		where := "is not scheduled"
		if pod.Spec.NodeName != "" {
			where = "runs on node " + pod.Spec.NodeName
		}
		return admission.Denied(fmt.Sprintf("the tickstack agent of node %s evicts only pods of its own node: pod %s/%s %s", node, req.Namespace, req.Name, where))
	}
	return admission.Allowed("")
}
