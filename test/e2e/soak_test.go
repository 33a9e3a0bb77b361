//go:build e2e

package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The soak (make soak; docs/e2e.md "Soak"): the operator installed as the whole flow installs
// it, then for SOAK_DURATION (default 10m) a profile change every few seconds, a scheduled benchmark
// every minute and the agent's pod deleted now and then. It samples the manager's, the agents' and
// tickstack-xdpd's resident memory, open fds and goroutines (threads for the C daemon), and fails on
// growth beyond soakBounds or on a stuck state: a profile generation the node does not reach in
// soakConverge, a benchmark run that never completes, a reboot slot or a cordon left behind.
// It carries the label "soak", which make e2e leaves out.

// soakBounds is how much a process may grow between the first samples after its warm-up and its
// last ones (medians of soakWindow samples each): memory by a factor and a constant (the Go heap's
// own target moves with the live heap, and a cache fills once), fds and goroutines by a constant.
var soakBounds = struct {
	rssFactor           float64
	rssSlackKiB         int64
	fdSlack, goroutines int64
}{rssFactor: 1.25, rssSlackKiB: 8 << 10, fdSlack: 8, goroutines: 20}

const (
	soakWindow       = 3
	soakConverge     = 2 * time.Minute // a profile generation reaches the node's status within it
	soakSampleEvery  = 15 * time.Second
	soakChangeEvery  = 5 * time.Second
	soakAgentRestart = 3 * time.Minute
	soakBenchmark    = "tse2e-soak"
)

// sample is one reading of a process.
type sample struct {
	at                      time.Time
	rssKiB, fds, goroutines int64
	pid                     int
}

// soakDuration is SOAK_DURATION (a Go duration), 10 minutes by default.
func soakDuration() time.Duration {
	GinkgoHelper()
	s := os.Getenv("SOAK_DURATION")
	if s == "" {
		return 10 * time.Minute
	}
	d, err := time.ParseDuration(s)
	Expect(err).NotTo(HaveOccurred(), "SOAK_DURATION=%q: write a Go duration such as 10m or 1h", s)
	Expect(d).To(BeNumerically(">=", 2*time.Minute), "SOAK_DURATION=%q: at least 2m, so the growth windows do not overlap", s)
	return d
}

// containerPID finds the host PID of a container's first process from its container ID: the
// process whose cgroup path names the ID, lowest PID first (the container's init).
func containerPID(containerID string) int {
	id := containerID[strings.Index(containerID, "://")+3:]
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	best := 0
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), id) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
		if best == 0 || pid < best {
			best = pid
		}
	}
	return best
}

// podContainer is the container ID of a running pod's container, by label selector.
func podContainer(selector, container string) (string, error) {
	out, err := kubectl(nil, "get", "pods", "-n", releaseNS, "-l", selector, "--field-selector", "status.phase=Running",
		"-o", "jsonpath={.items[*].status.containerStatuses[?(@.name=='"+container+"')].containerID}")
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	ids := strings.Fields(out)
	if len(ids) != 1 {
		return "", fmt.Errorf("want one running %s container for %s, found %q", container, selector, out)
	}
	return ids[0], nil
}

// procSample reads a process's resident memory, open fds and threads from /proc.
func procSample(pid int) (sample, error) {
	s := sample{at: time.Now(), pid: pid}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "VmRSS:" {
			s.rssKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
		if len(f) >= 2 && f[0] == "Threads:" {
			s.goroutines, _ = strconv.ParseInt(f[1], 10, 64) // the C daemon's threads; Go's come from /metrics
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.fds = int64(len(fds))
	return s, nil
}

var goGoroutines = regexp.MustCompile(`(?m)^go_goroutines (\d+)`)

// scrapeGoroutines reads go_goroutines from a component's metrics endpoint with a token bound to
// the release's metrics-reader ClusterRole (the endpoints serve only authorised clients).
func scrapeGoroutines(url, token string) (int64, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The components' serving certificates are self-signed (controller-runtime's metrics server);
		// the soak reads a number, it sends nothing secret but the short-lived token.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
	}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", url, resp.Status)
	}
	m := goGoroutines.FindSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("%s: no go_goroutines", url)
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// median of a window of samples, per field.
func medianOf(w []sample, field func(sample) int64) int64 {
	v := make([]int64, 0, len(w))
	for _, s := range w {
		v = append(v, field(s))
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}

// growth judges one process incarnation's samples: the median of its first window after warm-up
// against the median of its last window. It returns a line for the report and any bound exceeded.
func growth(name string, s []sample) (report string, exceeded []string) {
	if len(s) < 2*soakWindow+1 {
		return fmt.Sprintf("%-8s pid %d: %d samples, too few to judge", name, s[0].pid, len(s)), nil
	}
	first, last := s[1:1+soakWindow], s[len(s)-soakWindow:] // s[0] is the warm-up
	rss0, rss1 := medianOf(first, func(x sample) int64 { return x.rssKiB }), medianOf(last, func(x sample) int64 { return x.rssKiB })
	fd0, fd1 := medianOf(first, func(x sample) int64 { return x.fds }), medianOf(last, func(x sample) int64 { return x.fds })
	g0, g1 := medianOf(first, func(x sample) int64 { return x.goroutines }), medianOf(last, func(x sample) int64 { return x.goroutines })
	report = fmt.Sprintf("%-8s pid %-7d %4d samples over %-8s RSS %6.1f -> %6.1f MiB, fds %3d -> %3d, goroutines/threads %4d -> %4d",
		name, s[0].pid, len(s), s[len(s)-1].at.Sub(s[0].at).Round(time.Second), float64(rss0)/1024, float64(rss1)/1024, fd0, fd1, g0, g1)
	if float64(rss1) > float64(rss0)*soakBounds.rssFactor+float64(soakBounds.rssSlackKiB) {
		exceeded = append(exceeded, fmt.Sprintf("%s: RSS grew %d -> %d KiB (bound x%.2f + %d KiB)", name, rss0, rss1, soakBounds.rssFactor, soakBounds.rssSlackKiB))
	}
	if fd1 > fd0+soakBounds.fdSlack {
		exceeded = append(exceeded, fmt.Sprintf("%s: fds grew %d -> %d (bound +%d)", name, fd0, fd1, soakBounds.fdSlack))
	}
	if g1 > g0+soakBounds.goroutines {
		exceeded = append(exceeded, fmt.Sprintf("%s: goroutines/threads grew %d -> %d (bound +%d)", name, g0, g1, soakBounds.goroutines))
	}
	return report, exceeded
}

// soakProfile is the whole flow's profile without isolation (no kernel argument, so no reboot)
// and without a NIC group, with vm.stat_interval set to interval: each change is one runtime
// setting the agent writes and reports.
func soakProfile(interval int) string {
	p := profileOf(false, false)
	return strings.Replace(p, `vm.stat_interval: "10"`, fmt.Sprintf(`vm.stat_interval: "%d"`, interval), 1)
}

var _ = Describe("a soak of the operator", Ordered, Label("soak"), func() {
	// A failure carries the components' logs, the node's events and the pods' state: a soak fails
	// after minutes, and is read from its report, not rerun blind.
	AfterEach(func() {
		if !CurrentSpecReport().Failed() {
			return
		}
		reportComponentLogs(200, 0)
		out, _ := kubectl(nil, "get", "pods", "-A", "-o", "wide")
		AddReportEntry("pods", out)
		reportEvents()
	})

	It("installs the chart with the agent's metrics served", func() {
		clearCluster()
		resetRecorders()
		installRelease("--set", "agent.metrics.enabled=true")
		apply(holdManifest)
	})

	It("keeps its memory, fds and goroutines bounded and never sticks while profiles change, benchmarks run and the agent restarts", func() {
		duration := soakDuration()
		By("a token of the metrics reader")
		apply(`apiVersion: v1
kind: ServiceAccount
metadata: {name: tse2e-soak-metrics, namespace: ` + testNS + `}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: tse2e-soak-metrics}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ` + release + `-metrics-reader}
subjects: [{kind: ServiceAccount, name: tse2e-soak-metrics, namespace: ` + testNS + `}]
`)
		DeferCleanup(func() {
			_, _ = kubectl(nil, "delete", "clusterrolebinding", "tse2e-soak-metrics", "--ignore-not-found")
		})
		token, err := kubectl(nil, "create", "token", "tse2e-soak-metrics", "-n", testNS, "--duration", (duration + 30*time.Minute).String())
		Expect(err).NotTo(HaveOccurred(), token)
		token = strings.TrimSpace(token)

		By("the node labelled for the profile, the profile and a benchmark scheduled every minute")
		out, err := kubectl(nil, "label", "node", nodeName, roleLabel+"="+roleValue, "--overwrite")
		Expect(err).NotTo(HaveOccurred(), out)
		interval := 10
		apply(soakProfile(interval))
		apply(fmt.Sprintf(`
apiVersion: tickstack.io/v1alpha1
kind: LatencyBenchmark
metadata: {name: %s, namespace: %s}
spec:
  target: {profile: %s}
  placement: {mode: SamePod, runnerCPUs: 1, reflectorCPUs: 0, memory: 256Mi}
  suites:
    pingPong: {protocols: [udp], messageSizes: [64], durationSeconds: 2}
  thresholds: {maxDropped: 0}
  schedule: "@every 1m"
  timeoutSeconds: 300
`, soakBenchmark, testNS, profileName))

		managerSel := "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=manager"
		agentSel := "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=agent"
		xdpdSel := "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=xdpd"
		type proc struct {
			name, selector, container, metricsURL string
			incarnations                          map[string][]sample // by container ID
			order                                 []string
		}
		managerIP, err := kubectl(nil, "get", "pods", "-n", releaseNS, "-l", managerSel, "-o", "jsonpath={.items[0].status.podIP}")
		Expect(err).NotTo(HaveOccurred(), managerIP)
		procs := []*proc{
			{name: "manager", selector: managerSel, container: "manager", metricsURL: "https://" + strings.TrimSpace(managerIP) + ":8080/metrics"},
			{name: "agent", selector: agentSel, container: "agent", metricsURL: "https://198.19.200.1:8083/metrics"},
			{name: "xdpd", selector: xdpdSel, container: "xdpd"},
		}
		for _, p := range procs {
			p.incarnations = map[string][]sample{}
		}
		sampleAll := func() {
			for _, p := range procs {
				id, err := podContainer(p.selector, p.container)
				if err != nil {
					GinkgoWriter.Printf("sample %s: %v\n", p.name, err) // between an agent's deletion and its successor
					continue
				}
				pid := containerPID(id)
				if pid == 0 {
					continue
				}
				s, err := procSample(pid)
				if err != nil {
					continue
				}
				if p.metricsURL != "" {
					g, err := scrapeGoroutines(p.metricsURL, token)
					if err != nil {
						GinkgoWriter.Printf("sample %s: %v\n", p.name, err)
						continue // just started: not serving yet
					}
					s.goroutines = g
				}
				if _, ok := p.incarnations[id]; !ok {
					p.order = append(p.order, id)
				}
				p.incarnations[id] = append(p.incarnations[id], s)
			}
		}

		// converged: the node state shows the profile's latest generation applied, with the
		// interval the test set last, and no reboot slot held.
		converged := func(want int) error {
			s, err := getNodeState()
			if err != nil {
				return err
			}
			if s.Status.ObservedGeneration != s.Metadata.Generation {
				return fmt.Errorf("node state generation %d observed %d", s.Metadata.Generation, s.Status.ObservedGeneration)
			}
			if _, observed, state, ok := s.setting("sysctl/vm.stat_interval"); !ok || observed != strconv.Itoa(want) || state != "InSync" {
				return fmt.Errorf("vm.stat_interval observed %q state %q, want %d InSync", observed, state, want)
			}
			if s.Spec.RebootGranted {
				return fmt.Errorf("a reboot slot is granted")
			}
			return nil
		}
		Eventually(func() error { return converged(interval) }, soakConverge, time.Second).Should(Succeed())

		By(fmt.Sprintf("soaking for %s", duration))
		start := time.Now()
		nextSample, nextRestart := start, start.Add(soakAgentRestart)
		changes, restarts := 0, 0
		var latencies []time.Duration
		for time.Since(start) < duration {
			if !time.Now().Before(nextSample) {
				sampleAll()
				nextSample = nextSample.Add(soakSampleEvery)
			}
			if !time.Now().Before(nextRestart) && time.Until(start.Add(duration)) > soakAgentRestart {
				out, err := kubectl(nil, "delete", "pod", "-n", releaseNS, "-l", agentSel, "--wait=true", "--timeout=2m")
				Expect(err).NotTo(HaveOccurred(), out)
				out, err = kubectl(nil, "rollout", "status", "-n", releaseNS, "daemonset/"+release+"-agent", "--timeout=3m")
				Expect(err).NotTo(HaveOccurred(), out)
				restarts++
				nextRestart = nextRestart.Add(soakAgentRestart)
			}
			interval = 10 + (interval-9)%5 // 10..14, never the value it has
			apply(soakProfile(interval))
			changes++
			t0 := time.Now()
			Eventually(func() error { return converged(interval) }, soakConverge, 250*time.Millisecond).Should(Succeed(),
				"change %d (vm.stat_interval %d) stuck", changes, interval)
			latencies = append(latencies, time.Since(t0))
			time.Sleep(soakChangeEvery)
		}
		sampleAll()

		By("the benchmark ran every minute and each run has a verdict")
		var b struct {
			Status struct {
				Run        int64       `json:"run"`
				Verdict    string      `json:"verdict"`
				Conditions []condition `json:"conditions"`
			} `json:"status"`
		}
		// a run may be in flight at the end of the soak (its verdict not
		// yet written): its end is waited for, as it finishes in seconds
		Eventually(func(g Gomega) {
			g.Expect(getJSON(&b, "latencybenchmark", soakBenchmark, "-n", testNS)).To(Succeed())
			g.Expect(b.Status.Verdict).NotTo(BeEmpty(), "run %d has no verdict", b.Status.Run)
		}, 2*time.Minute, 2*time.Second).Should(Succeed())
		minutes := int64(duration / time.Minute)
		Expect(b.Status.Run).To(BeNumerically(">=", minutes-1), "scheduled every minute for %s, ran %d times", duration, b.Status.Run)
		out, err = kubectl(nil, "delete", "latencybenchmark", soakBenchmark, "-n", testNS, "--wait=true", "--timeout=2m")
		Expect(err).NotTo(HaveOccurred(), out)

		By("no cordon, no taint of the agent's, no benchmark pod left")
		node := getNode(Default)
		Expect(node.Spec.Unschedulable).To(BeFalse(), "the node is cordoned")
		for _, t := range node.Spec.Taints {
			Expect(t.Key).NotTo(HavePrefix("tickstack.io/"), "a tickstack taint is left")
		}
		Eventually(func() (string, error) {
			return kubectl(nil, "get", "pods", "-n", testNS, "-l", "tickstack.io/benchmark="+soakBenchmark, "-o", "name")
		}, 2*time.Minute, 2*time.Second).Should(BeEmpty())

		By("growth within the bounds")
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		report := []string{fmt.Sprintf("soak %s: %d profile changes (applied in median %s, max %s), %d agent restarts, %d benchmark runs",
			duration, changes, latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond), restarts, b.Status.Run)}
		var exceeded []string
		for _, p := range procs {
			Expect(p.order).NotTo(BeEmpty(), "no sample of %s", p.name)
			for _, id := range p.order {
				line, ex := growth(p.name, p.incarnations[id])
				report = append(report, line)
				exceeded = append(exceeded, ex...)
			}
		}
		AddReportEntry("soak", strings.Join(report, "\n"))
		GinkgoWriter.Println(strings.Join(report, "\n"))
		Expect(procs[0].order).To(HaveLen(1), "the manager restarted during the soak")
		Expect(exceeded).To(BeEmpty())
		Expect(restarts).To(BeNumerically(">=", 1), "the agent was never restarted")
	})

	It("restores the node and uninstalls", func() {
		out, err := kubectl(nil, "delete", "latencyprofile", profileName, "--wait=true", "--timeout=3m")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(hostDiff(snapshot)).To(BeEmpty(), "host values not restored after the soak")
		clearCluster()
	})
})
