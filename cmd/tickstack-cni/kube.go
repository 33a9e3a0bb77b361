package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeClient is the little of the API the plugin needs: read a pod and a NetworkAttachmentDefinition,
// patch the pod's network-status annotation. Plain REST keeps the binary (run once per pod) small.
type kubeClient struct {
	base string
	http *http.Client
}

func newKubeClient(kubeconfig string) (*kubeClient, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("config: kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &kubeClient{base: strings.TrimSuffix(cfg.Host, "/"), http: hc}, nil
}

func (k *kubeClient) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, k.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

func (k *kubeClient) getPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := k.do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods/"+url.PathEscape(name), "", nil, pod)
	return pod, err
}

func (k *kubeClient) getNAD(ctx context.Context, ns, name string) (*nadv1.NetworkAttachmentDefinition, error) {
	nad := &nadv1.NetworkAttachmentDefinition{}
	err := k.do(ctx, http.MethodGet, "/apis/k8s.cni.cncf.io/v1/namespaces/"+url.PathEscape(ns)+
		"/network-attachment-definitions/"+url.PathEscape(name), "", nil, nad)
	if err != nil {
		return nil, fmt.Errorf("NetworkAttachmentDefinition %s/%s: %w", ns, name, err)
	}
	return nad, nil
}

func (k *kubeClient) setNetworkStatus(ctx context.Context, ns, name string, statuses []nadv1.NetworkStatus) error {
	val, err := json.MarshalIndent(statuses, "", "    ")
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{networkStatusAnnotation: string(val)}}})
	if err != nil {
		return err
	}
	return k.do(ctx, http.MethodPatch, "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods/"+url.PathEscape(name),
		"application/merge-patch+json", patch, nil)
}
