#!/usr/bin/env bash
# Builds Kubernetes binaries (kube-apiserver, kubelet, ...) from the upstream k8s.io/kubernetes module
# source at a pinned version, because no release download is reachable here. The module cannot be
# `go install`ed directly (its go.mod points the staging repos at ./staging), so a throw-away module
# requires it and replaces every staging module with its published v0.Y.Z twin.
#
# Usage: hack/k8s-build.sh BINARY...   (e.g. kube-apiserver kubelet)
# Output: $TICKSTACK_CACHE/k8s/$K8S_VERSION/bin/BINARY (built once, reused while present).
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.32.3}
cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}
work="$cache/k8s/$K8S_VERSION"
bin="$work/bin"
mkdir -p "$bin" "$work/mod"

# One build at a time per cache: the local cluster, envtest and CI may ask for the same binary at once,
# and two `go build -o $b.tmp` would write the same file. Waiters find the binary built and skip it.
exec 9>"$work/.lock"
flock 9

declare -A pkg=(
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kubelet]=k8s.io/kubernetes/cmd/kubelet
  [kube-proxy]=k8s.io/kubernetes/cmd/kube-proxy
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
)

export GOFLAGS=-mod=mod GONOSUMDB=k8s.io GONOSUMCHECK=1 GOTOOLCHAIN=local
minor=${K8S_VERSION#v1.}   # 32.3
staging_version="v0.${minor}"

if [ ! -f "$work/mod/go.mod" ] || ! grep -q "k8s.io/kubernetes $K8S_VERSION" "$work/mod/go.mod"; then
  (
    cd "$work/mod"
    cat > go.mod <<MOD
module tickstack.local/k8sbuild

go 1.23

require k8s.io/kubernetes $K8S_VERSION
MOD
    go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
    kmod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod
    grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$kmod" | awk '{print $1}' | sort -u | while read -r m; do
      echo "replace $m => $m $staging_version" >> go.mod
    done
    printf 'package main\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n\nfunc main() {}\n' > tools.go
  )
fi

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}"
for b in "$@"; do
  [ -n "${pkg[$b]:-}" ] || { echo "k8s-build: unknown binary $b (known: ${!pkg[*]})" >&2; exit 2; }
  if [ -x "$bin/$b" ]; then continue; fi
  echo "k8s-build: building $b $K8S_VERSION (first build takes minutes; cached after)" >&2
  (cd "$work/mod" && go build -trimpath -ldflags "$ldflags" -o "$bin/$b.tmp" "${pkg[$b]}")
  mv "$bin/$b.tmp" "$bin/$b"
done
echo "$bin"
