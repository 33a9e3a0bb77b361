#!/usr/bin/env bash
# Makes the folder KUBEBUILDER_ASSETS points at: kube-apiserver built from the upstream module source
# (hack/k8s-build.sh), Debian's etcd, and kubectl. setup-envtest's own download cannot work here.
# Prints the folder. Idempotent; the build is cached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=${K8S_VERSION:-v1.32.3}
cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}
dir="$cache/envtest/$K8S_VERSION"
mkdir -p "$dir"
bin=$("$here/k8s-build.sh" kube-apiserver kubectl | tail -n1)
etcd=$(command -v etcd || true)
[ -n "$etcd" ] || { echo "envtest-assets: etcd not found: run hack/install-deps.sh (Debian etcd-server)" >&2; exit 1; }
ln -sf "$bin/kube-apiserver" "$dir/kube-apiserver"
ln -sf "$bin/kubectl" "$dir/kubectl"
ln -sf "$etcd" "$dir/etcd"
echo "$dir"
