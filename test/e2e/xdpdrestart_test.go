//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// xdpdCmdline is how the node's tickstack-xdpd runs (the chart's command): the local cluster's
// kubelet runs it on this host, in the host's PID namespace, so the test finds it by it.
const xdpdCmdline = "^/opt/tickstack/dataplane/tickstack-xdpd --run-dir "

// xdpdRestartSteps: tickstack-xdpd restarts (SIGKILL, then a rolling update's SIGTERM) under a
// bypass ping-pong between two pods. Its programs, maps, entries and the pods' XSKs stay on the
// pods' interfaces; the new daemon takes them over from its state file without the CNI plugin
// (docs/dataplane.md, "Daemon restarts"). So the ping-pong loses nothing, and a socket opened after
// the restart, in a running pod or in a pod created after it, is accelerated (TICKSTACK_REQUIRE=1:
// a socket that could not be would fail its bind).
func xdpdRestartSteps() {
	DeferCleanup(func() {
		_, _ = kubectl(nil, "delete", "pod", "xr-a", "xr-b", "xr-c", "-n", testNS, "--ignore-not-found", "--wait=true", "--timeout=120s")
	})
	addr := map[string]string{}
	uid := map[string]string{}
	// a bypass pod on the node's shared CPUs, running until deleted
	bypassPod := func(name string) {
		GinkgoHelper()
		apply(bypassPodManifest(name, "", ""))
		uid[name] = runningUID(name)
		addr[name] = lat0Addr(name)
	}
	in := inPod
	// the steering entries of a pod's lat0 in the daemon's status ("<uid> lat0 <netns> <clients> <entries>")
	entries := func(pod string) func() (string, error) {
		return func() (string, error) {
			out, err := kubectl(nil, "exec", "-n", releaseNS, "ds/"+release+"-xdpd", "-c", "xdpd", "--",
				"/opt/tickstack/dataplane/tickstack-xdpd", "ctl", "status")
			m := regexp.MustCompile(`(?m)^` + uid[pod] + ` lat0 \d+ \d+ (\d+)$`).FindStringSubmatch(out)
			if m == nil {
				return "", fmt.Errorf("no line for %s in %q (%v)", pod, out, err)
			}
			return m[1], err
		}
	}
	daemonPID := func() (string, error) {
		out, err := run(30*time.Second, nil, "pgrep", "-f", xdpdCmdline)
		if err != nil || len(strings.Fields(out)) != 1 {
			return "", fmt.Errorf("pgrep -f %q: %q (%v): want one tickstack-xdpd", xdpdCmdline, out, err)
		}
		return strings.TrimSpace(out), nil
	}
	// The node's xdpd pod and its xdpd container's id while that container runs. The kubelet starts
	// a killed container again within a second or two, before it reports the new container in the
	// pod's status; until it does, kubectl logs (the kubelet answers it from that status) still
	// returns the killed container's log: the log is read once the status names the new container.
	xdpdContainer := func() (pod, id string, err error) {
		out, err := kubectl(nil, "get", "pods", "-n", releaseNS, "-l", "app.kubernetes.io/component=xdpd", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {range .status.containerStatuses[?(@.name=="xdpd")]}{.containerID} {.state.running.startedAt}{end}{"\n"}{end}`)
		f := strings.Fields(out)
		if err != nil || len(f) != 3 {
			return "", "", fmt.Errorf("want one xdpd pod with its xdpd container running: %q (%v)", out, err)
		}
		return f[0], f[1], nil
	}
	takenOver := func(pod string, pods ...string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			logs, err := kubectl(nil, "logs", "-n", releaseNS, pod, "-c", "xdpd")
			g.Expect(err).NotTo(HaveOccurred(), logs)
			for _, p := range pods {
				g.Expect(logs).To(MatchRegexp(`tickstack-xdpd: pod `+uid[p]+`: lat0 taken over from the previous daemon \(program \d+, now \d+; \d+ steering entries\)`), "pod %s", p)
			}
		}, 30*time.Second, time.Second).Should(Succeed())
	}
	// the pod's kernel's UDP datagrams in (its network namespace's /proc/net/snmp)
	udpIn := func(pod string) int {
		GinkgoHelper()
		lines := strings.Split(in(pod, "grep '^Udp:' /proc/net/snmp"), "\n")
		Expect(lines).To(HaveLen(2))
		n, err := strconv.Atoi(strings.Fields(lines[1])[1])
		Expect(err).NotTo(HaveOccurred(), lines[1])
		return n
	}
	server := func(pod string, port int) {
		GinkgoHelper()
		in(pod, fmt.Sprintf("nohup sockperf sr -i %s -p %d >/tmp/sr-%d.log 2>&1 & echo $! >/tmp/sr-%d.pid", addr[pod], port, port, port))
		Eventually(entries(pod), 30*time.Second, 200*time.Millisecond).Should(Equal("1"), "the server's port steered to its XSK")
	}
	// accelerated: a ping-pong whose client's stats show every round trip through its XSK on lat0
	accelerated := func(out string) {
		GinkgoHelper()
		Expect(out).To(ContainSubstring("# dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0"))
		xskRoundTrips(out)
	}
	pp := func(from, to string, port int) string {
		GinkgoHelper()
		return in(from, fmt.Sprintf("TICKSTACK_STATS=1 sockperf pp -i %s -p %d -t 2 -m 64 2>&1", addr[to], port))
	}
	// A ping-pong running in the background for secs, and its output once it ended. At 20,000
	// round trips a second: sockperf sizes its table of samples for the duration at its top rate
	// unless given one, and for 20 s that table alone is past the pod's 128 MiB (the memory cgroup's
	// OOM killer ended the client a second into the ping-pong, 12:30 run).
	ppRunning := func(from, to string, port, secs int) func() string {
		GinkgoHelper()
		in(from, fmt.Sprintf("rm -f /tmp/pp.log; nohup sh -c 'TICKSTACK_STATS=1 sockperf pp -i %s -p %d -t %d -m 64 --mps=20000 >/tmp/pp.log 2>&1; echo pp-ended >>/tmp/pp.log' >/dev/null 2>&1 &",
			addr[to], port, secs))
		return func() string {
			GinkgoHelper()
			Eventually(func() string { return in(from, "cat /tmp/pp.log") }, time.Duration(secs+60)*time.Second, time.Second).
				Should(ContainSubstring("pp-ended"))
			return in(from, "cat /tmp/pp.log")
		}
	}

	// The client of a ping-pong started in the background is running: its socket is steered to its
	// XSK (the pod's one entry), then a second of round trips. A fixed wait was not enough: a
	// client that started its socket after the daemon went away waited for the next daemon
	// (TICKSTACK_XDPD_WAIT_MS) and, when a rolling update took longer, failed its bind
	// (TICKSTACK_REQUIRE=1): the restart must come under a running ping-pong, not before it.
	pingPonging := func(pod string) {
		GinkgoHelper()
		Eventually(entries(pod), time.Minute, 200*time.Millisecond).Should(Equal("1"), "the ping-pong client's socket steered")
		time.Sleep(time.Second) // round trips before the restart, not a wait for a condition
	}

	bypassPod("xr-a")
	bypassPod("xr-b")
	server("xr-a", 11131)

	By("tickstack-xdpd killed with SIGKILL under a running ping-pong: nothing lost, the pods served again without the CNI")
	old, err := daemonPID()
	Expect(err).NotTo(HaveOccurred())
	xpod, xid, err := xdpdContainer()
	Expect(err).NotTo(HaveOccurred())
	udp0 := udpIn("xr-a")
	ended := ppRunning("xr-b", "xr-a", 11131, 20)
	pingPonging("xr-b")
	out, err := run(30*time.Second, nil, "kill", "-KILL", old)
	Expect(err).NotTo(HaveOccurred(), out)
	Eventually(func() (string, error) {
		pod, id, err := xdpdContainer()
		if err == nil && (pod != xpod || id == xid) {
			return "", fmt.Errorf("pod %s container %s: want pod %s's xdpd container started again", pod, id, xpod)
		}
		return id, err
	}, 2*time.Minute, 500*time.Millisecond).ShouldNot(BeEmpty(), "the kubelet starts tickstack-xdpd again, in the same pod")
	pid, err := daemonPID()
	Expect(err).NotTo(HaveOccurred())
	Expect(pid).NotTo(Equal(old), "a new tickstack-xdpd")
	// the killed daemon's log: what it attached, and no "stopping" (SIGKILL left it no word)
	logs, err := kubectl(nil, "logs", "-n", releaseNS, xpod, "-c", "xdpd", "--previous")
	Expect(err).NotTo(HaveOccurred(), logs)
	Expect(logs).To(ContainSubstring("tickstack-xdpd: pod " + uid["xr-a"] + ": lat0 attached"))
	Expect(logs).NotTo(ContainSubstring("stopping"))
	takenOver(xpod, "xr-a", "xr-b")
	Eventually(entries("xr-a"), time.Minute, time.Second).Should(Equal("1"), "the server's entry, taken over")
	accelerated(ended())
	Expect(udpIn("xr-a")-udp0).To(BeNumerically("<=", 20), "the server's kernel received the ping-pong")

	By("sockets opened after the restart in the running pods: accelerated (TICKSTACK_REQUIRE=1)")
	accelerated(pp("xr-b", "xr-a", 11131))
	in("xr-a", "kill -INT $(cat /tmp/sr-11131.pid)")
	Eventually(entries("xr-a"), 30*time.Second, 200*time.Millisecond).Should(Equal("0"), "the old server's entry goes with it")
	server("xr-a", 11132)
	accelerated(pp("xr-b", "xr-a", 11132))

	By("a pod created after the restart: plumbed and accelerated")
	bypassPod("xr-c")
	server("xr-c", 11133)
	accelerated(pp("xr-b", "xr-c", 11133))

	By("a rolling update of tickstack-xdpd (SIGTERM, a new pod) under a running ping-pong: nothing lost either")
	old, err = daemonPID()
	Expect(err).NotTo(HaveOccurred())
	udp0 = udpIn("xr-a")
	ended = ppRunning("xr-b", "xr-a", 11132, 25)
	pingPonging("xr-b")
	out, err = kubectl(nil, "rollout", "restart", "-n", releaseNS, "daemonset/"+release+"-xdpd")
	Expect(err).NotTo(HaveOccurred(), out)
	out, err = kubectl(nil, "rollout", "status", "-n", releaseNS, "daemonset/"+release+"-xdpd", "--timeout=3m")
	Expect(err).NotTo(HaveOccurred(), out)
	pid, err = daemonPID()
	Expect(err).NotTo(HaveOccurred())
	Expect(pid).NotTo(Equal(old), "a new tickstack-xdpd")
	pod, _, err := xdpdContainer()
	Expect(err).NotTo(HaveOccurred())
	Expect(pod).NotTo(Equal(xpod), "a new pod of tickstack-xdpd")
	takenOver(pod, "xr-a", "xr-b", "xr-c")
	Eventually(entries("xr-a"), time.Minute, time.Second).Should(Equal("1"))
	accelerated(ended())
	Expect(udpIn("xr-a")-udp0).To(BeNumerically("<=", 20), "the server's kernel received the ping-pong")
	accelerated(pp("xr-b", "xr-c", 11133))
}
