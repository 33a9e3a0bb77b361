//go:build e2e

package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tickstack/tickstack/internal/testutil"
)

// agentMetricsPort is the chart's agent.metrics.port, which values() turns on: the agent runs with
// hostNetwork, so its endpoint is on the node's address.
const agentMetricsPort = 8083

// metricsReaderToken is a token of a service account bound to the release's metrics-reader
// ClusterRole, as docs/monitoring.md has Prometheus get one; both go when the spec ends.
func metricsReaderToken() string {
	GinkgoHelper()
	const sa, crb = "tse2e-prometheus", "tse2e-metrics-reader"
	out, err := kubectl(nil, "create", "serviceaccount", sa, "-n", testNS)
	Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl(nil, "create", "clusterrolebinding", crb, "--clusterrole", release+"-metrics-reader",
		"--serviceaccount", testNS+":"+sa)
	Expect(err).NotTo(HaveOccurred(), out)
	DeferCleanup(func() {
		_, _ = kubectl(nil, "delete", "clusterrolebinding", crb, "--ignore-not-found")
		_, _ = kubectl(nil, "delete", "serviceaccount", sa, "-n", testNS, "--ignore-not-found")
	})
	out, err = kubectl(nil, "create", "token", sa, "-n", testNS, "--duration", "10m")
	Expect(err).NotTo(HaveOccurred(), out)
	return strings.TrimSpace(out)
}

// scrapeAgent gets the node agent's /metrics as Prometheus does (HTTPS, the agent's self-signed
// certificate, a bearer token the agent's filter checks with the API server).
func scrapeAgent(nodeIP, token string) (map[string]*dto.MetricFamily, error) {
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the agent's certificate is self-signed, as the PodMonitor says
	}}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://%s/metrics", net.JoinHostPort(nodeIP, strconv.Itoa(agentMetricsPort))), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// seriesOf returns the series of family whose labels include want, as label maps with the value
// under "" (counters and gauges).
func seriesOf(fams map[string]*dto.MetricFamily, family string, want map[string]string) []map[string]string {
	series, out := testutil.SeriesWith(fams[family], want)
	for i, m := range series {
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		out[i][""] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return out
}

// expectBypassMetrics: the node agent's metrics endpoint shows the process podPID of pod (its
// container container) under its namespace and name, with at least minRX frames received on ifname
// and no drop of its socket queue.
func expectBypassMetrics(pod, container, podPID, ifname string, minRX int) {
	GinkgoHelper()
	token := metricsReaderToken()
	nodeIP, err := kubectl(nil, "get", "node", nodeName, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)
	Expect(err).NotTo(HaveOccurred(), nodeIP)
	nodeIP = strings.TrimSpace(nodeIP)
	Expect(nodeIP).NotTo(BeEmpty(), "node %s has no InternalIP", nodeName)
	who := map[string]string{"namespace": testNS, "pod": pod, "container": container}
	Eventually(func(g Gomega) {
		fams, err := scrapeAgent(nodeIP, token)
		g.Expect(err).NotTo(HaveOccurred())
		info := seriesOf(fams, "tickstack_bypass_process_info", who)
		g.Expect(info).To(ContainElement(And(HaveKeyWithValue("pod_pid", podPID), HaveKeyWithValue("", "1"))),
			"no tickstack_bypass_process_info of %s/%s pid %s in the pod: %v", testNS, pod, podPID, seriesOf(fams, "tickstack_bypass_process_info", nil))
		var pid string
		for _, s := range info {
			if s["pod_pid"] == podPID {
				pid = s["pid"]
			}
		}
		rx := seriesOf(fams, "tickstack_bypass_packets_total", map[string]string{"namespace": testNS, "pod": pod, "pid": pid, "interface": ifname, "direction": "rx"})
		g.Expect(rx).To(HaveLen(1))
		n, _ := strconv.ParseFloat(rx[0][""], 64)
		g.Expect(n).To(BeNumerically(">=", minRX), "frames received by %s/%s on %s", testNS, pod, ifname)
		drops := seriesOf(fams, "tickstack_bypass_drops_total", map[string]string{"namespace": testNS, "pod": pod, "pid": pid, "interface": ifname, "reason": "socket_queue_full"})
		g.Expect(drops).To(ConsistOf(HaveKeyWithValue("", "0")))
	}, time.Minute, 2*time.Second).Should(Succeed())
}
