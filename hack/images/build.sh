#!/usr/bin/env bash
# Builds tickstack's images with buildah, with no registry: the Debian bases from debootstrap tarballs,
# the static pause image, and the Dockerfile targets (manager, agent, bench) from prebuilt binaries.
# Each image is written to an OCI archive under $TICKSTACK_CACHE/images/oci/NAME.tar and, with
# --import, imported into the local cluster's containerd (hack/local-cluster import).
#
# The upstream components tickstack runs (hack/third-party.sh builds their binaries from the sources
# pinned in hack/third-party.lock) get images of the same shape as their upstream ones, on the same
# Debian base, named localhost/NAME:VERSION (NAME: multus-cni, node-feature-discovery,
# sriov-network-device-plugin).
#
# Usage: hack/images/build.sh [--import] [--test-build] [--tag TAG] [--bin NAME=PATH]... [TARGET...]
#   TARGET   pause | base | manager | agent | bench | multus | nfd | sriovdp   (default: manager agent bench)
#   --bin    use PATH as bin/NAME instead of `go build ./cmd/NAME`
#            (NAME: manager, agent, tickstack, tickstack-bench, tickstack-bench-upload; the last three go in
#            the bench image)
#   --test-build  go build with -tags failpoint: the agent gets --failpoint-file, which the e2e
#            uses to kill it mid-apply; a release build has no such flag (cmd/agent/failpoint.go)
#   --tag    image tag (default: charts/tickstack appVersion, else dev):
#            localhost/tickstack-{manager,agent,bench}:TAG, the names the chart uses
# Prints the archive paths, one a line.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}/images
oci="$cache/oci"
suite=${DEBIAN_SUITE:-bookworm}
PAUSE_IMAGE=${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}
BASE_IMAGE=localhost/tickstack-debian:$suite
TOOLS_IMAGE=localhost/tickstack-debian-tools:$suite
# The chart's default image tag is its appVersion: build under that name unless --tag says otherwise.
tag=$(awk -F'"' '/^appVersion:/ {print $2}' "$repo/charts/tickstack/Chart.yaml" 2>/dev/null || true)
tag=${tag:-dev}
import=0
gotags=
declare -A bins=()
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --import) import=1 ;;
    --test-build) gotags=failpoint ;;
    --tag) tag=$2; shift ;;
    --bin) bins[${2%%=*}]=${2#*=}; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[ ${#targets[@]} -gt 0 ] || targets=(manager agent bench)
mkdir -p "$oci"
log() { echo "images: $*" >&2; }

# image_id IMAGE: the ID of IMAGE in buildah's storage, empty when absent.
image_id() { buildah images -q --no-trunc "$1" 2>/dev/null | head -n1 || true; }

# drop_replaced OLD_ID IMAGE: removes the image IMAGE's name used to point at, once nothing names it,
# so rebuilds do not pile up untagged images.
drop_replaced() {
  [ -n "$1" ] && [ "$1" != "$(image_id "$2")" ] || return 0
  buildah rmi "$1" >/dev/null 2>&1 || true
}

# to_archive IMAGE FILE: writes IMAGE from buildah's storage to an OCI archive named IMAGE.
to_archive() {
  rm -f "$2"
  buildah push -q "$1" "oci-archive:$2:$1" >/dev/null
  echo "$2"
}

# has_image IMAGE NEWER_THAN: true if IMAGE is in buildah's storage and was made after file NEWER_THAN.
has_image() {
  local created
  created=$(buildah inspect -t image -f '{{.Docker.Created.Unix}}' "$1" 2>/dev/null) || return 1
  [ -z "${2:-}" ] || [ "$created" -ge "$(stat -c %Y "$2")" ]
}

# from_rootfs IMAGE TARBALL: an image whose single layer is the rootfs tarball.
from_rootfs() {
  if has_image "$1" "$2"; then return; fi
  log "committing $1 from $2"
  local old; old=$(image_id "$1")
  local c; c=$(buildah from scratch)
  buildah add -q "$c" "$2" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --cmd /bin/bash "$c"
  buildah commit -q --rm "$c" "$1" >/dev/null
  drop_replaced "$old" "$1"
}

build_bases() {
  local base tools
  base=$("$repo/hack/images/debian-rootfs.sh" base)
  tools=$("$repo/hack/images/debian-rootfs.sh" tools)
  from_rootfs "$BASE_IMAGE" "$base"
  from_rootfs "$TOOLS_IMAGE" "$tools"
}

build_pause() {
  local out="$oci/pause.tar" src="$repo/hack/images/pause.c"
  if [ -s "$out" ] && [ "$out" -nt "$src" ]; then echo "$out"; return; fi
  local work; work=$(mktemp -d /tmp/tslc-pause.XXXXXX)
  gcc -static -Os -Wall -Wextra -Werror -o "$work/pause" "$src"
  strip "$work/pause"
  local old; old=$(image_id "$PAUSE_IMAGE")
  local c; c=$(buildah from scratch)
  buildah copy -q "$c" "$work/pause" /pause >/dev/null
  buildah config --entrypoint '["/pause"]' --user 65535:65535 "$c"
  buildah commit -q --rm "$c" "$PAUSE_IMAGE" >/dev/null
  drop_replaced "$old" "$PAUSE_IMAGE"
  rm -rf "$work"
  to_archive "$PAUSE_IMAGE" "$out"
}

# stage DIR: the Dockerfile's build context (see the Dockerfile's header).
stage() {
  local ctx=$1 name
  mkdir -p "$ctx/bin" "$ctx/bench-bin" "$ctx/dataplane"
  for name in manager agent tickstack-xdp-cni tickstack tickstack-bench tickstack-bench-upload; do
    if [ -n "${bins[$name]:-}" ]; then
      cp "${bins[$name]}" "$ctx/bin/$name"
    elif [ -d "$repo/cmd/$name" ] && ls "$repo/cmd/$name"/*.go >/dev/null 2>&1; then
      log "go build ./cmd/$name"
      (cd "$repo" && CGO_ENABLED=0 go build -trimpath ${gotags:+-tags "$gotags"} -ldflags "-s -w $("$repo/hack/ldflags.sh")" -o "$ctx/bin/$name" "./cmd/$name")
    fi
  done
  # The benchmark pods run tickstack-bench, then tickstack-bench-upload writes its results into the
  # run's ConfigMap (docs/benchmark.md).
  for name in tickstack tickstack-bench tickstack-bench-upload; do
    [ ! -f "$ctx/bin/$name" ] || cp "$ctx/bin/$name" "$ctx/bench-bin/$name"
  done
  # The dataplane's runtime outputs only: libraries, BPF objects and tools at the top of
  # dataplane/build, not its objects, test and fuzz programs or corpora.
  local f
  for f in "$repo"/dataplane/build/*; do
    [ -f "$f" ] || continue
    case "$(basename "$f")" in
      test_*|fuzz_*|*.h|*.o) case "$f" in *.bpf.o) ;; *) continue ;; esac ;;
    esac
    case "$f" in
      *.so|*.so.*|*.bpf.o) cp "$f" "$ctx/dataplane/" ;;
      *) [ -x "$f" ] && cp "$f" "$ctx/dataplane/" ;;
    esac
  done
  return 0
}

build_target() {
  local target=$1 ctx=$2 image="localhost/tickstack-$1:$tag"
  case "$target" in
    manager) [ -f "$ctx/bin/$target" ] || { log "no binary for $target: give --bin $target=PATH or add ./cmd/$target"; exit 1; } ;;
    agent) for b in agent tickstack-xdp-cni; do
        [ -f "$ctx/bin/$b" ] || { log "no binary for $b: give --bin $b=PATH or add ./cmd/$b"; exit 1; }
      done ;;
  esac
  log "buildah bud --target $target -> $image"
  local old; old=$(image_id "$image")
  buildah bud -q --layers=false --target "$target" -t "$image" \
    --build-arg "BASE_IMAGE=$BASE_IMAGE" --build-arg "TOOLS_IMAGE=$TOOLS_IMAGE" \
    -f "$repo/Dockerfile" "$ctx" >/dev/null
  drop_replaced "$old" "$image"
  to_archive "$image" "$oci/$target.tar"
}

# build_third_party TARGET: the image of an upstream component, from hack/third-party.sh's binaries,
# laid out as the upstream image is (its manifests run it unchanged).
build_third_party() {
  local target=$1 name version bindir image out c old
  case "$target" in
    multus) name=multus-cni ;;
    nfd) name=node-feature-discovery ;;
    sriovdp) name=sriov-network-device-plugin ;;
  esac
  version=$(awk -F'\t' -v n="$name" '!/^#/ && $1 == n {print $2}' "$repo/hack/third-party.lock")
  bindir=$("$repo/hack/third-party.sh" "$name") || exit 1
  bindir=${bindir#*=}
  image=localhost/$name:$version
  out="$oci/$name.tar"
  if has_image "$image" "$bindir/.built" && [ -s "$out" ] && [ "$out" -nt "$bindir/.built" ]; then
    echo "$out"
    return
  fi
  build_bases
  log "$image from $bindir"
  old=$(image_id "$image")
  # The device plugin needs the PCI name database (Debian's pci.ids), which the tools base has.
  if [ "$target" = sriovdp ]; then c=$(buildah from -q "$TOOLS_IMAGE"); else c=$(buildah from -q "$BASE_IMAGE"); fi
  case "$target" in
    multus)
      # The upstream image: the thin plugin and its installers under /usr/src/multus-cni/bin, the
      # entry points at /.
      buildah copy -q "$c" "$bindir/multus" "$bindir/passthru" "$bindir/thin_entrypoint" "$bindir/install_multus" /usr/src/multus-cni/bin/ >/dev/null
      buildah copy -q "$c" "$bindir/LICENSE" /usr/src/multus-cni/LICENSE >/dev/null
      buildah copy -q "$c" "$bindir/thin_entrypoint" "$bindir/install_multus" / >/dev/null
      buildah config --cmd '' "$c"
      buildah config --entrypoint '["/thin_entrypoint"]' "$c" ;;
    nfd)
      buildah copy -q "$c" "$bindir/nfd-master" "$bindir/nfd-worker" "$bindir/nfd-gc" /usr/bin/ >/dev/null
      buildah copy -q "$c" "$bindir/LICENSE" /usr/share/doc/node-feature-discovery/LICENSE >/dev/null
      # The upstream image's default worker configuration, user and gRPC log level.
      buildah copy -q "$c" "$bindir/../src/deployment/components/worker-config/nfd-worker.conf.example" \
        /etc/kubernetes/node-feature-discovery/nfd-worker.conf >/dev/null
      buildah config --cmd '' --user 65534:65534 --env GRPC_GO_LOG_SEVERITY_LEVEL=INFO "$c" ;;
    sriovdp)
      # The upstream image: sriovdp in /usr/bin and its entry point script at / (its arguments:
      # --log-level, --resource-prefix, --config-file, ...). Intel's ddptool (DDP profiles only) is
      # not built.
      buildah copy -q "$c" "$bindir/sriovdp" /usr/bin/ >/dev/null
      buildah copy -q "$c" "$bindir/../src/images/entrypoint.sh" /entrypoint.sh >/dev/null
      buildah copy -q "$c" "$bindir/LICENSE" /usr/share/doc/sriov-network-device-plugin/LICENSE >/dev/null
      buildah config --cmd '' --workingdir / --entrypoint '["/entrypoint.sh"]' "$c" ;;
  esac
  buildah config --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.source=$(awk -F'\t' -v n="$name" '!/^#/ && $1 == n {print $4}' "$repo/hack/third-party.lock")" "$c"
  buildah commit -q --rm "$c" "$image" >/dev/null
  drop_replaced "$old" "$image"
  to_archive "$image" "$out"
}

archives=()
ctx=""
for t in "${targets[@]}"; do
  case "$t" in
    pause) archives+=("$(build_pause)") ;;
    base) build_bases ;;
    multus|nfd|sriovdp) archives+=("$(build_third_party "$t")") ;;
    manager|agent|bench)
      if [ -z "$ctx" ]; then
        build_bases
        ctx=$(mktemp -d /tmp/tslc-ctx.XXXXXX)
        trap 'rm -rf "$ctx"' EXIT
        stage "$ctx"
      fi
      archives+=("$(build_target "$t" "$ctx")") ;;
    *) log "unknown target $t"; exit 2 ;;
  esac
done
if [ "$import" = 1 ] && [ ${#archives[@]} -gt 0 ]; then
  "$repo/hack/local-cluster" import "${archives[@]}"
fi
printf '%s\n' "${archives[@]}"
