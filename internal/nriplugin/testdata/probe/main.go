// Command probe is the container of the NRI test (containerd_test.go): its first act is to record
// what the host shows at the start of its process (every IRQ's affinity, the PM QoS resume latency
// limit and cpuidle disable files of the CPUs in $PROBE_CPUS, the CFS quota of its cgroup) as JSON in /out/start.json, then it
// sleeps until it is stopped. With the argument "pause" it only sleeps (the pod's sandbox).
package main

import (
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

func read(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(string(b))
}

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	if len(os.Args) > 1 && os.Args[1] == "pause" {
		<-sig
		return
	}
	rec := map[string]string{}
	dirs, _ := filepath.Glob("/proc/irq/[0-9]*")
	for _, d := range dirs {
		rec["irq/"+filepath.Base(d)+"/smp_affinity_list"] = read(d + "/smp_affinity_list")
		rec["irq/"+filepath.Base(d)+"/effective_affinity_list"] = read(d + "/effective_affinity_list")
	}
	rec["interrupts"] = read("/proc/interrupts")
	for _, cpu := range strings.Split(os.Getenv("PROBE_CPUS"), ",") {
		rec["pmqos/cpu"+cpu] = read("/sys/devices/system/cpu/cpu" + cpu + "/power/pm_qos_resume_latency_us")
		states, _ := filepath.Glob("/sys/devices/system/cpu/cpu" + cpu + "/cpuidle/state[0-9]*")
		for _, s := range states {
			rec["cpuidle/cpu"+cpu+"/"+filepath.Base(s)] = read(s + "/disable")
		}
	}
	for _, p := range []string{"/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"} {
		if _, err := os.Stat(p); err == nil {
			rec["cpu-quota"] = read(p)
			break
		}
	}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile("/out/start.json.tmp", b, 0o644); err == nil {
		_ = os.Rename("/out/start.json.tmp", "/out/start.json")
	}
	<-sig
}
