#!/usr/bin/env bash
# The main job (make demo): bring up the local cluster, build and import the images, install the
# chart, measure tick-to-trade on the plain node, apply the sample profile (adapted to this one-node
# cluster), run a LatencyBenchmark (ping-pong, tick-to-trade against that baseline, oslat) and print
# its results tables (`tickstack bench`), then say how to look around and how to tear down.
#
# The node is THIS machine: the agent really tunes it. Kernel arguments need a reboot this machine
# must never do, so the demo installs the agent with a reboot command that only records, a boot
# loader drop-in in a scratch directory, and an admission policy that holds every reboot slot; the
# profile's runtime settings take effect, its kernel arguments show as pending.
# Everything is put back by: hack/demo.sh down
set -euo pipefail
cd "$(dirname "$0")/.."

HELM=${HELM:-bin/helm-v3.22.0}
NS=tickstack-system
DEMO_NS=tickstack-demo
SCRATCH=/tmp/tse2e-demo
KUBECTL=(hack/local-cluster kubectl)
log() { printf '\n== %s\n' "$*" >&2; }

down() {
  log "tearing the demo down (the agent restores the host when the profile goes)"
  "${KUBECTL[@]}" delete latencybenchmarks.tickstack.io --all -n "$DEMO_NS" --ignore-not-found --wait=true --timeout=60s 2>/dev/null || true
  "${KUBECTL[@]}" delete latencyprofiles.tickstack.io --all --ignore-not-found --wait=true --timeout=180s 2>/dev/null || true
  "${KUBECTL[@]}" wait --for=delete latencynodestates.tickstack.io --all --timeout=120s 2>/dev/null || true
  KUBECONFIG=$(hack/local-cluster kubeconfig) "$HELM" uninstall tickstack -n "$NS" --wait --ignore-not-found || true
  "${KUBECTL[@]}" delete validatingadmissionpolicybinding,validatingadmissionpolicy tickstack-demo-reboot-hold --ignore-not-found || true
  "${KUBECTL[@]}" delete namespace "$DEMO_NS" "$NS" --ignore-not-found --wait=true --timeout=180s || true
  "${KUBECTL[@]}" annotate node tslc-node tickstack.io/benchmark-passed- 2>/dev/null || true
  "${KUBECTL[@]}" label node tslc-node tickstack.io/role- tickstack.io/validated- 2>/dev/null || true
  rm -rf "$SCRATCH"
  # The agent's own state on the host: its journal lock and boot loader stamp. A journal left
  # behind would hold originals not yet restored: then keep everything and say so.
  if [ -e /var/lib/tickstack/tuning-journal.json ]; then
    echo "demo: /var/lib/tickstack/tuning-journal.json remains: the agent did not restore everything; kept" >&2
  else
    rm -rf /var/lib/tickstack/bootloader /var/lib/tickstack/tuning-journal.json.lock
  fi
  [ "$(ls -A /etc/default/grub.d 2>/dev/null)" ] || rmdir /etc/default/grub.d 2>/dev/null || true
  echo "demo: removed. Stop the cluster with: hack/local-cluster stop" >&2
}

if [ "${1:-}" = down ]; then
  down
  exit 0
fi

log "local cluster"
hack/local-cluster start

log "helm and the tickstack CLI"
[ -x "$HELM" ] || make --no-print-directory helm
go build -o bin/tickstack ./cmd/tickstack

log "images (built from ./cmd/* and dataplane/build, imported into the node's containerd)"
# Rebuilt when what they are built from changed since the last import (tracked files and
# uncommitted changes to them), when the node lacks them, or with DEMO_REBUILD=1: with uncommitted
# changes the tag (hack/version.sh's, ending .dirty) stays the same, so an old image under it would
# otherwise run the old code.
stamp_file=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}/images/demo-sources.sha256
sources=(api cmd internal dataplane Dockerfile go.mod go.sum hack/images charts/tickstack/Chart.yaml)
stamp=
if git rev-parse --git-dir >/dev/null 2>&1; then
  stamp=$({ git ls-files -s -- "${sources[@]}"; git diff HEAD -- "${sources[@]}"
    git ls-files --others --exclude-standard -- "${sources[@]}" | xargs -r sha256sum; } | sha256sum | cut -d' ' -f1)
fi
rebuilt=0
if [ -n "${DEMO_REBUILD:-}" ] || [ -z "$stamp" ] || [ "$stamp" != "$(cat "$stamp_file" 2>/dev/null)" ] ||
  ! "${KUBECTL[@]}" get node tslc-node -o jsonpath='{.status.images[*].names}' | grep -qF "localhost/tickstack-bench:$(hack/version.sh)"; then
  make --no-print-directory dataplane
  hack/images/build.sh --import
  mkdir -p "$(dirname "$stamp_file")"
  [ -z "$stamp" ] || echo "$stamp" >"$stamp_file"
  rebuilt=1
else
  echo "images on the node are built from these sources (DEMO_REBUILD=1 rebuilds them)" >&2
fi

log "helm install (reboot command records only, boot loader drop-in in $SCRATCH)"
mkdir -p "$SCRATCH/grub.d"
values=$(mktemp /tmp/tse2e-demo-values.XXXXXX)
trap 'rm -f "$values"' EXIT
cni_bin_dir=$(hack/local-cluster env | sed -n 's/^export TSLC_CNI_BIN_DIR=//p')
cluster_dir=$(hack/local-cluster env | sed -n 's/^export TICKSTACK_CLUSTER_DIR=//p')
# A profile's kubelet section restarts the local cluster's kubelet (a process, no systemd) with
# hack/local-cluster kubelet-stop / kubelet-start, run in the host's mount namespace.
# This VM's PID 1 is closed to containers: the host's mount namespace is containerd's.
lc() { echo "[/bin/sh, -c, 'exec nsenter --target \"\$(pgrep -o -x containerd)\" --mount -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TICKSTACK_CACHE=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack} TICKSTACK_CLUSTER_DIR=$cluster_dir $PWD/hack/local-cluster $1']"; }
cat >"$values" <<EOF
imagePullPolicy: Never
manager:
  # one node: with two replicas and their PodDisruptionBudget, a drain of the only node could not
  # evict the second replica (the first one's replacement waits for the uncordon)
  replicas: 1
  resources: {requests: {cpu: null, memory: 64Mi}}
xdpd:
  cniBinDir: $cni_bin_dir
  resources: {requests: {cpu: null, memory: 16Mi}}
# The upstream SR-IOV network device plugin, on the configuration the operator renders
# (docs/third-party.md); this VM has no VFs, which kubectl get lns reports as 0.
sriovDevicePlugin:
  enabled: true
agent:
  resources: {requests: {cpu: null, memory: 32Mi}}
  rebootCommand: [/bin/sh, -c, 'date >> /demo/reboots']
  bootLoader: {type: grub, grubUpdateCommand: [/bin/sh, -c, 'date >> /demo/grub-updates']}
  extraVolumes:
  - {name: demo-scratch, hostPath: {path: $SCRATCH, type: DirectoryOrCreate}}
  extraVolumeMounts:
  - {name: demo-scratch, mountPath: /demo}
  - {name: demo-scratch, mountPath: /host/etc/default/grub.d, subPath: grub.d}
  hostProcess: containerd
  kubelet:
    configDir: $cluster_dir/etc/kubelet.conf.d
    rootDir: $cluster_dir/kubelet
    stopCommand: $(lc kubelet-stop)
    startCommand: $(lc kubelet-start)
EOF
installed=0
KUBECONFIG=$(hack/local-cluster kubeconfig) "$HELM" status tickstack -n "$NS" >/dev/null 2>&1 && installed=1
# The images hack/images/build.sh --import tagged with this tree's version (hack/version.sh: a
# development version off a release tag, not the chart's appVersion).
KUBECONFIG=$(hack/local-cluster kubeconfig) "$HELM" upgrade --install tickstack charts/tickstack -n "$NS" \
  --create-namespace -f "$values" --set imageTag="$(hack/version.sh)" --wait --timeout 8m
if [ "$rebuilt" = 1 ] && [ "$installed" = 1 ]; then
  # same image names as before: the running pods keep the old images until restarted
  log "restarting the operator's pods on the rebuilt images"
  # (deleted rather than rolled: tickstack-xdpd's DaemonSet updates OnDelete)
  "${KUBECTL[@]}" -n "$NS" delete pod --all --wait=true --timeout=3m >/dev/null
  for w in $("${KUBECTL[@]}" -n "$NS" get deployment,daemonset -o name); do
    if [ "$("${KUBECTL[@]}" -n "$NS" get "$w" -o jsonpath='{.spec.updateStrategy.type}')" = OnDelete ]; then
      want=$("${KUBECTL[@]}" -n "$NS" get "$w" -o jsonpath='{.status.desiredNumberScheduled}')
      "${KUBECTL[@]}" -n "$NS" wait "$w" --for=jsonpath='{.status.numberReady}'="$want" --timeout=5m
    else
      "${KUBECTL[@]}" -n "$NS" rollout status "$w" --timeout=5m
    fi
  done
fi

log "reboot hold: this machine never reboots, so no node gets a reboot slot"
"${KUBECTL[@]}" apply -f - <<'EOF'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: tickstack-demo-reboot-hold}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [tickstack.io], apiVersions: ["*"], operations: [CREATE, UPDATE], resources: [latencynodestates]}
  validations:
  - expression: "!has(object.spec.rebootGranted) || !object.spec.rebootGranted || (oldObject != null && has(oldObject.spec.rebootGranted) && oldObject.spec.rebootGranted) || (has(object.status) && has(object.status.reboot) && has(object.status.reboot.action) && object.status.reboot.action == 'KubeletRestart')"
    message: the demo machine never reboots (a kubelet restart's slot is let through)
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: tickstack-demo-reboot-hold}
spec: {policyName: tickstack-demo-reboot-hold, validationActions: [Deny]}
EOF
# The API server enforces a new policy a moment after it is created: probe it before any profile.
probe='{"apiVersion":"tickstack.io/v1alpha1","kind":"LatencyNodeState","metadata":{"name":"demo-probe"},
"spec":{"nodeName":"demo-probe","profile":{"name":"demo"},"rebootGranted":true}}'
for i in $(seq 60); do
  out=$(echo "$probe" | "${KUBECTL[@]}" create --dry-run=server -f - 2>&1 || true)
  case "$out" in *"never reboots"*) break ;; esac
  [ "$i" -lt 60 ] || { echo "demo: the reboot hold is not enforced; not applying a profile" >&2; exit 1; }
  sleep 2
done

# Paper 004 compares tick-to-trade out of the box with the tuned host: measure the plain node first
# (kernel stack, the pods' cluster network), then the tuned run below names this one as its baseline.
log "benchmark before tuning: tick-to-trade on the plain node (the baseline)"
bench=$(mktemp /tmp/tse2e-demo-bench.XXXXXX)
trap 'rm -f "$values" "$bench"' EXIT
cat >"$bench" <<EOF
apiVersion: tickstack.io/v1alpha1
kind: LatencyBenchmark
metadata: {name: demo-untuned, namespace: $DEMO_NS}
spec:
  target: {nodeNames: [tslc-node]}
  stacks: [kernel]
  placement: {mode: TwoPods, runnerCPUs: 1, reflectorCPUs: 0}
  suites:
    tickToTrade: {durationSeconds: 2}
  timeoutSeconds: 600
EOF
"${KUBECTL[@]}" create namespace "$DEMO_NS" --dry-run=client -o yaml | "${KUBECTL[@]}" apply -f -
# Benchmarks run only in namespaces an administrator opted in (docs/security.md, "Benchmark namespaces").
"${KUBECTL[@]}" create rolebinding tickstack-benchmarks --namespace "$DEMO_NS" --clusterrole tickstack-benchmark-namespace \
  --serviceaccount "$NS:tickstack-manager" --dry-run=client -o yaml | "${KUBECTL[@]}" apply -f -
"${KUBECTL[@]}" delete latencybenchmark demo-untuned -n "$DEMO_NS" --ignore-not-found --wait=true
bin/tickstack --kubeconfig "$(hack/local-cluster kubeconfig)" bench -f "$bench" -n "$DEMO_NS" --timeout 10m

log "the demo profile (hack/demo-profile.yaml: the sample adapted, CPU 1 isolated, the node's veth as the bypass NIC)"
"${KUBECTL[@]}" label node tslc-node tickstack.io/role=trading --overwrite
"${KUBECTL[@]}" apply -f hack/demo-profile.yaml
# The node state appears once the operator resolved the profile; then the agent applies it.
for i in $(seq 150); do
  if "${KUBECTL[@]}" get latencynodestate tslc-node >/dev/null 2>&1; then break; fi
  [ "$i" -lt 150 ] || { echo "demo: no node state after 5 minutes" >&2; exit 1; }
  sleep 2
done
"${KUBECTL[@]}" wait --for=condition=RebootRequired latencynodestate/tslc-node --timeout=5m
"${KUBECTL[@]}" get lp,lns
echo "kernel arguments stay pending (this machine never reboots): see kubectl get lns tslc-node -o yaml" >&2

# A node with settings pending is not Applied, and the operator offers only Applied nodes to latency
# pods (the benchmark's among them). Without the isolation the profile needs no reboot.
log "the same profile without cpu.isolated: the runtime settings are all in effect, the node Applied"
"${KUBECTL[@]}" patch latencyprofile trading --type=json -p '[{"op":"remove","path":"/spec/cpu/isolated"}]'
"${KUBECTL[@]}" wait --for=condition=Applied latencynodestate/tslc-node --timeout=5m
"${KUBECTL[@]}" wait --for=jsonpath='{.metadata.labels.tickstack\.io/profile}'=trading node/tslc-node --timeout=2m
"${KUBECTL[@]}" get lns
log "the SR-IOV device plugin (the demo profile hands out no VFs: it waits for a pool)"
"${KUBECTL[@]}" -n "$NS" logs daemonset/tickstack-sriov-device-plugin --tail=5

# oslat only: cyclictest's SCHED_FIFO is refused in pods here (cgroup v1 RT group scheduling, and
# the kubelet leaves kubepods' cpu.rt_runtime_us at 0).
log "benchmark: kernel and bypass UDP ping-pong and tick-to-trade between two pods over the macvlan network, then oslat"
cat >"$bench" <<EOF
apiVersion: tickstack.io/v1alpha1
kind: LatencyBenchmark
metadata: {name: demo, namespace: $DEMO_NS}
spec:
  target: {profile: trading}
  stacks: [kernel, bypass]
  placement: {mode: TwoPods, runnerCPUs: 1, reflectorCPUs: 0}
  suites:
    pingPong: {protocols: [udp], messageSizes: [64, 256, 1024], durationSeconds: 5}
    tickToTrade: {durationSeconds: 2, baseline: {benchmark: demo-untuned}}
    jitter: {cpus: pod, durationSeconds: 10, tools: [oslat]}
  thresholds:
    maxDropped: 0
    latency:
    - {suite: jitter, statistic: p99, max: 200us}
  timeoutSeconds: 600
EOF
rc=0
bin/tickstack --kubeconfig "$(hack/local-cluster kubeconfig)" bench -f "$bench" -n "$DEMO_NS" --timeout 12m || rc=$?

cat >&2 <<EOF

== look around
  eval "\$(hack/local-cluster env)"            # KUBECONFIG for kubectl / helm / bin/tickstack
  hack/local-cluster kubectl get lp,lns          # the profile and the node's state
  hack/local-cluster kubectl get lns tslc-node -o yaml   # every setting: desired, observed, state
  hack/local-cluster kubectl -n $NS logs ds/tickstack-sriov-device-plugin   # the device plugin
  hack/local-cluster kubectl get lbench -n $DEMO_NS       # the benchmark; bin/tickstack report demo -n $DEMO_NS -o report.html
  ls \$(dirname \$(hack/local-cluster kubeconfig))/logs    # each component's log
== tear down
  hack/demo.sh down          # profile deleted (the host is restored), chart uninstalled
  hack/local-cluster stop    # the cluster (hack/local-cluster clean also drops its state)
EOF
exit "$rc"
