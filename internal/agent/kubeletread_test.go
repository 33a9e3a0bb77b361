package agent_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
)

// TestKubeletConfigz: the agent reads /configz from the address and port its Node (on the real
// API server) gives, over TLS checked against the CA it is given, with its bearer token and
// nothing else; a kubelet certificate the CA does not sign is an error, as is a refusal (the
// kubelet without fine-grained authorization asks for nodes/proxy).
func TestKubeletConfigz(t *testing.T) {
	const token = "agent-token"
	refuse := false
	kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer "+token || r.TLS.PeerCertificates != nil:
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		case refuse:
			http.Error(w, "Forbidden (user=system:serviceaccount:tickstack-system:tickstack-agent, verb=get, resource=nodes, subresource(s)=[proxy])", http.StatusForbidden)
		case r.URL.Path == "/configz":
			_, _ = w.Write([]byte(`{"kubeletconfig":{"cpuManagerPolicy":"static"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer kubelet.Close()
	host, portS, _ := net.SplitHostPort(kubelet.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)

	node := agenttest.Name("configz")
	createNode(t, node)
	n := &corev1.Node{}
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "not-this"}, {Type: corev1.NodeInternalIP, Address: host}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if err := k8s.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}

	ca := filepath.Join(t.TempDir(), "kubelet-ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kubelet.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	// The agent's in-cluster config: a token and the cluster's CA (here the API server's, which
	// does not sign the kubelet's certificate); client certificates are never sent to the kubelet.
	agentCfg := rest.CopyConfig(cfg)
	agentCfg.BearerToken = token

	read, err := agent.KubeletConfigz(agentCfg, k8s, node, ca)
	if err != nil {
		t.Fatal(err)
	}
	b, err := read(ctx)
	if err != nil || !strings.Contains(string(b), `"static"`) {
		t.Fatalf("configz = %s, %v", b, err)
	}

	refuse = true
	if _, err := read(ctx); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a refusing kubelet: got %v, want the 403", err)
	}
	refuse = false

	untrusted, err := agent.KubeletConfigz(agentCfg, k8s, node, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusted(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a kubelet certificate the cluster CA does not sign: got %v, want a TLS error", err)
	}
}

// TestKubeletConfigReader: configz first; the files when configz fails, saying why; an error
// naming both when neither answers.
func TestKubeletConfigReader(t *testing.T) {
	ctx := context.Background()
	doc := []byte(`{"kubeletconfig":{}}`)
	ok := func(context.Context) ([]byte, error) { return doc, nil }
	refused := func(context.Context) ([]byte, error) { return nil, errors.New("403 Forbidden") }
	files := func(context.Context) ([]byte, string, error) { return doc, "/etc/kubelet.yaml", nil }
	noFiles := func(context.Context) ([]byte, string, error) { return nil, "", errors.New("the kubelet does not run") }

	got, err := agent.KubeletConfigReader{Configz: ok, Files: files}.Read(ctx)
	if err != nil || got.Source != tsv1.KubeletConfigFromConfigz {
		t.Errorf("configz answering: %+v, %v", got, err)
	}
	got, err = agent.KubeletConfigReader{Configz: refused, Files: files}.Read(ctx)
	if err != nil || got.Source != tsv1.KubeletConfigFromFiles || !strings.Contains(got.Message, "/etc/kubelet.yaml") || !strings.Contains(got.Message, "403 Forbidden") {
		t.Errorf("configz refused: %+v, %v", got, err)
	}
	if _, err = (agent.KubeletConfigReader{Configz: refused, Files: noFiles}).Read(ctx); err == nil ||
		!strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "does not run") {
		t.Errorf("neither: %v", err)
	}
}
