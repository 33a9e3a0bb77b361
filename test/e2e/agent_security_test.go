//go:build e2e

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// agentTokenSteps: the agent's service account token, bound to the agent's pod like the one its
// kubelet mounts, is refused an exec into a running pod through the API server (pods/exec) and at
// the kubelet itself (/exec and /run, which a kubelet authorizes as nodes/proxy), while the same
// token reads the kubelet's /configz (nodes/configz: the refusals are authorization, not a token
// the kubelet does not accept); the agent reports that it reads its kubelet's configuration there.
func agentTokenSteps() {
	env, err := run(time.Minute, nil, "hack/local-cluster", "env")
	Expect(err).NotTo(HaveOccurred(), env)
	clusterDir := envValue(env, "TICKSTACK_CLUSTER_DIR")
	apiServer := envValue(env, "TSLC_API_SERVER")
	nodeIP := envValue(env, "TSLC_NODE_IP")
	ca, err := os.ReadFile(filepath.Join(clusterDir, "pki", "ca.crt"))
	Expect(err).NotTo(HaveOccurred())
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(ca)).To(BeTrue())
	// The kubelet's serving certificate is signed by the cluster's CA (hack/local-cluster.d/pki.sh):
	// both are verified.
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}

	agentPod, err := kubectl(nil, "get", "pod", "-n", releaseNS, "-l", "app.kubernetes.io/component=agent",
		"--field-selector", "status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}")
	Expect(err).NotTo(HaveOccurred(), agentPod)
	Expect(agentPod).NotTo(BeEmpty(), "no running agent pod")
	token, err := kubectl(nil, "create", "token", release+"-agent", "-n", releaseNS, "--duration=10m",
		"--bound-object-kind=Pod", "--bound-object-name="+agentPod)
	Expect(err).NotTo(HaveOccurred(), token)
	token = strings.TrimSpace(token)

	// The target: the manager's pod, running, in another workload than the agent's.
	target, err := kubectl(nil, "get", "pod", "-n", releaseNS, "-l", "app.kubernetes.io/component=manager",
		"--field-selector", "status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}")
	Expect(err).NotTo(HaveOccurred(), target)
	Expect(target).NotTo(BeEmpty(), "no running manager pod")
	container, err := kubectl(nil, "get", "pod", "-n", releaseNS, target, "-o", "jsonpath={.spec.containers[0].name}")
	Expect(err).NotTo(HaveOccurred(), container)

	call := func(method, url string) (int, string) {
		GinkgoHelper()
		req, err := http.NewRequest(method, url, nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		Expect(err).NotTo(HaveOccurred(), "%s %s", method, url)
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b)
	}

	By("the API server refuses the agent's token an exec into the manager's pod")
	// can-i exits 1 for "no"
	canI, _ := kubectl(nil, "auth", "can-i", "create", "pods/exec", "-n", releaseNS,
		"--as=system:serviceaccount:"+releaseNS+":"+release+"-agent")
	Expect(strings.TrimSpace(canI)).To(Equal("no"))
	code, body := call(http.MethodPost, fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/exec?command=id&container=%s&stdout=true",
		apiServer, releaseNS, target, container))
	Expect(code).To(Equal(http.StatusForbidden), body)
	Expect(body).To(ContainSubstring("pods/exec"))
	code, body = call(http.MethodGet, fmt.Sprintf("%s/api/v1/nodes/%s/proxy/configz", apiServer, nodeName))
	Expect(code).To(Equal(http.StatusForbidden), "nodes/proxy through the API server: %s", body)

	kubelet := "https://" + nodeIP + ":10250"
	By("the kubelet accepts the token for /configz (nodes/configz) and refuses /exec, /run and /pods")
	code, body = call(http.MethodGet, kubelet+"/configz")
	Expect(code).To(Equal(http.StatusOK), body)
	Expect(body).To(ContainSubstring(`"kubeletconfig"`))
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, fmt.Sprintf("/exec/%s/%s/%s?command=id&output=1", releaseNS, target, container)},
		{http.MethodPost, fmt.Sprintf("/run/%s/%s/%s?cmd=id", releaseNS, target, container)},
		{http.MethodGet, "/pods"},
	} {
		code, body := call(c.method, kubelet+c.path)
		Expect(code).To(Equal(http.StatusForbidden), "%s %s at the kubelet: %s", c.method, c.path, body)
	}

	By("the agent reports that it reads its kubelet's configuration from configz")
	Eventually(func(g Gomega) {
		lns, err := getNodeState()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lns.Status.KubeletConfig).NotTo(BeNil())
		g.Expect(lns.Status.KubeletConfig.Source).To(Equal("Configz"), "%+v", lns.Status.KubeletConfig)
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
}
