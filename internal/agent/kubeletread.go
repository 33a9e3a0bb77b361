package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host/kubeletconf"
)

// How the agent reads the running kubelet's configuration (docs/agent.md "Kubelet settings",
// docs/security.md): the agent holds no nodes/proxy (a GET on it runs commands in any pod through
// any kubelet). It asks its own node's kubelet for /configz directly, with its service account's
// token; a kubelet with fine-grained authorization (KubeletFineGrainedAuthz) authorizes that as
// nodes/configz, which the agent's ClusterRole grants and which reaches nothing else. A kubelet
// without it asks for nodes/proxy and refuses: then the agent reads the kubelet's configuration
// files on the host (kubeletconf.ReadFiles) and status.kubeletConfig says so.

// KubeletConfig is one reading of the running kubelet's configuration.
type KubeletConfig struct {
	// Doc is the configuration as configz shows it: {"kubeletconfig": {...}}.
	Doc []byte
	// Source and Message are status.kubeletConfig.
	Source  tsv1.KubeletConfigSource
	Message string
}

// KubeletConfigReader reads the kubelet's configuration from configz, else from its files.
type KubeletConfigReader struct {
	// Configz asks the kubelet for /configz (nil: never).
	Configz func(ctx context.Context) ([]byte, error)
	// Files reads the kubelet's configuration files, returning the configz-shaped document and
	// a description of what was read (nil: never).
	Files func(ctx context.Context) ([]byte, string, error)
}

// Read returns configz's answer, else the files'; an error when neither answers.
func (k KubeletConfigReader) Read(ctx context.Context) (KubeletConfig, error) {
	var errs []string
	if k.Configz != nil {
		b, err := k.Configz(ctx)
		if err == nil {
			return KubeletConfig{Doc: b, Source: tsv1.KubeletConfigFromConfigz, Message: "read from the kubelet's /configz (nodes/configz)"}, nil
		}
		errs = append(errs, "configz: "+err.Error())
	}
	if k.Files != nil {
		b, what, err := k.Files(ctx)
		if err == nil {
			return KubeletConfig{Doc: b, Source: tsv1.KubeletConfigFromFiles, Message: limit("read from " + what + "; " + strings.Join(errs, "; "))}, nil
		}
		errs = append(errs, "files: "+err.Error())
	}
	if len(errs) == 0 {
		errs = append(errs, "no reader of the kubelet's configuration")
	}
	return KubeletConfig{}, errors.New(strings.Join(errs, "; "))
}

// limit keeps a message within the API's 1024 characters.
func limit(s string) string {
	if len(s) > 1000 {
		return s[:1000] + "..."
	}
	return s
}

// KubeletEndpoint returns the address of node's kubelet from its Node: the InternalIP (else
// ExternalIP, else Hostname) and status.daemonEndpoints.kubeletEndpoint.Port.
func KubeletEndpoint(ctx context.Context, c client.Reader, node string) (host string, port int, err error) {
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return "", 0, fmt.Errorf("reading node %s for its kubelet's address: %w", node, err)
	}
	port = int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port == 0 {
		return "", 0, fmt.Errorf("node %s has no status.daemonEndpoints.kubeletEndpoint.port yet", node)
	}
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range n.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address, port, nil
			}
		}
	}
	return "", 0, fmt.Errorf("node %s has no address in status.addresses", node)
}

// KubeletConfigz reads /configz from node's kubelet directly (https, the kubelet's port), with
// cfg's credentials (the agent's service account token, re-read as it rotates). The kubelet's
// serving certificate is checked against caFile, else cfg's CA (the cluster's): a kubelet with a
// self-signed serving certificate fails here, and the agent reads its files instead.
func KubeletConfigz(cfg *rest.Config, c client.Reader, node, caFile string) (func(context.Context) ([]byte, error), error) {
	kc := rest.AnonymousClientConfig(cfg)
	kc.BearerToken, kc.BearerTokenFile = cfg.BearerToken, cfg.BearerTokenFile
	if caFile != "" {
		if _, err := os.Stat(caFile); err != nil {
			return nil, fmt.Errorf("--kubelet-ca-file: %w", err)
		}
		kc.CAFile, kc.CAData = caFile, nil
	}
	rt, err := rest.TransportFor(kc)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: rt, Timeout: 10 * time.Second}
	return func(ctx context.Context) ([]byte, error) {
		host, port, err := KubeletEndpoint(ctx, c, node)
		if err != nil {
			return nil, err
		}
		url := "https://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/configz"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s: %.300s", url, resp.Status, strings.TrimSpace(string(b)))
		}
		return b, nil
	}, nil
}

// KubeletFiles reads the configuration files of the kubelet that listens on node's kubelet port,
// found through procRoot ("/proc", the agent has hostPID) and netNS (the host's network
// namespace's /proc/PID/net: the agent has hostNetwork, so /proc/self/net).
func KubeletFiles(c client.Reader, node, procRoot, netNS string) func(context.Context) ([]byte, string, error) {
	return func(ctx context.Context) ([]byte, string, error) {
		_, port, err := KubeletEndpoint(ctx, c, node)
		if err != nil {
			return nil, "", err
		}
		k, err := kubeletconf.FindKubelet(procRoot, netNS, port)
		if err != nil {
			return nil, "", err
		}
		b, files, err := kubeletconf.ReadFiles(procRoot, k)
		if err != nil {
			return nil, "", err
		}
		return b, fmt.Sprintf("the files of the kubelet (pid %d, listening on port %d): %s", k.PID, port, strings.Join(files, ", ")), nil
	}
}
