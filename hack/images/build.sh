#!/usr/bin/env bash
# Builds tickstack's images (the Dockerfile's targets manager, agent, bench: the agent image also runs
# tickstack-xdpd) for any registry, with docker, podman or buildah, whichever works here (docs/images.md):
#   hack/images/build.sh --registry REGISTRY/PATH --push          (make images / make push)
# names them REGISTRY/PATH/tickstack-{manager,agent,bench}:VERSION (VERSION: hack/version.sh, a
# development version such as 0.2.0-dev.g<commit> off a release tag), pushes them and prints each as
# NAME:VERSION@DIGEST, the digest the chart's <component>.imageDigest takes.
#
# Bases and binaries: by default the public Debian bases, and everything compiled inside the build
# (the Dockerfile's source stages). This project's machines reach no image registry: there
# --bases local starts from Debian root filesystems made by debootstrap (hack/images/debian-rootfs.sh,
# committed into buildah's storage) and --binaries prebuilt (local's default) copies binaries built on
# the host (go build, the dataplane's make) from a staged build context. --import then loads the images
# into the local cluster's containerd without a registry: the quick loop of hack/demo.sh.
#
# The upstream components tickstack runs (hack/third-party.sh builds their binaries from the sources
# pinned in hack/third-party.lock) get images of the same shape as their upstream ones, on the same
# Debian base, named localhost/NAME:VERSION (NAME: multus-cni, node-feature-discovery,
# sriov-network-device-plugin); with --push they go to REGISTRY/NAME:VERSION. They, pause and the bases
# need buildah.
#
# Usage: hack/images/build.sh [OPTION]... [TARGET...]
#   TARGET   pause | base | manager | agent | bench | multus | nfd | sriovdp   (default: manager agent bench)
#   --registry R   image names below R (default: localhost)
#   --version V    image tag and the binaries' version (default: hack/version.sh); --tag V: a tag only
#   --bases B      public (default) or local (debootstrap, buildah or podman; --import's default)
#   --binaries B   source (compiled in the build; public's default) or prebuilt (local's default)
#   --bin NAME=PATH  with prebuilt binaries, PATH as NAME instead of `go build ./cmd/NAME` (NAME: manager,
#                  agent, tickstack-xdp-cni, tickstack-xdpd-plugin, tickstack, tickstack-bench, tickstack-bench-upload)
#   --test-build   with prebuilt binaries, go build with -tags failpoint: the agent gets --failpoint-file,
#                  which the e2e uses to kill it mid-apply; a release build has no such flag
#                  (cmd/agent/failpoint.go). Give such images a version of their own (the e2e's ends .failpoint).
#   --tool T       docker, podman or buildah (default: $CONTAINER_TOOL, else the first that works)
#   --push         push each image to its registry (plain HTTP and no TLS check for a loopback registry)
#   --no-build     with --push: push the images an earlier run built, build nothing (make push)
#   --archive-dir D  write each image as an OCI archive D/NAME-VERSION.oci.tar (make release)
#   --import       import the images into the local cluster's containerd (hack/local-cluster import)
# Prints one line per image: NAME:TAG@DIGEST with --push or --archive-dir, else its OCI archive path.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}/images
oci="$cache/oci"
suite=${DEBIAN_SUITE:-bookworm}
PAUSE_IMAGE=${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}
LOCAL_BASE_IMAGE=localhost/tickstack-debian:$suite
LOCAL_TOOLS_IMAGE=localhost/tickstack-debian-tools:$suite
registry=localhost
version=""
tag=""
bases=""
binaries=""
tool=${CONTAINER_TOOL:-}
import=0
gotags=
push=0
build=1
archive_dir=""
declare -A bins=()
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --import) import=1 ;;
    --test-build) gotags=failpoint ;;
    --push) push=1 ;;
    --no-build) build=0 ;;
    --registry) registry=${2%/}; shift ;;
    --version) version=$2; shift ;;
    --tag) tag=$2; shift ;;
    --bases) bases=$2; shift ;;
    --binaries) binaries=$2; shift ;;
    --tool) tool=$2; shift ;;
    --archive-dir) archive_dir=$2; shift ;;
    --bin) bins[${2%%=*}]=${2#*=}; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    -*) echo "images: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[ ${#targets[@]} -gt 0 ] || targets=(manager agent bench)
# Importing into the local cluster happens on this project's machines, whose bases are local.
[ -n "$bases" ] || { [ "$import" = 1 ] && bases=local || bases=public; }
case "$bases" in public|local) ;; *) echo "images: --bases $bases: say public or local" >&2; exit 2 ;; esac
[ -n "$binaries" ] || { [ "$bases" = local ] && binaries=prebuilt || binaries=source; }
case "$binaries" in source|prebuilt) ;; *) echo "images: --binaries $binaries: say source or prebuilt" >&2; exit 2 ;; esac
if [ -n "$gotags" ] && [ "$binaries" != prebuilt ]; then
  echo "images: --test-build needs --binaries prebuilt (the Dockerfile's source build makes release binaries only)" >&2; exit 2
fi
[ -n "$version" ] || version=$("$repo/hack/version.sh")
tag=${tag:-$version}
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

# drop_older_tags IMAGE: removes from containers/storage the other tags of IMAGE's repository made
# before it. Called after IMAGE was pushed: those are in the registry they were pushed to, and a
# development loop that pushes each commit's images (the e2e) would otherwise fill the disk, until
# the kubelet's image garbage collection removes the pause image and no pod starts.
drop_older_tags() {
  local name=${1%:*} ref
  buildah images --filter "before=$1" --format '{{.Name}}:{{.Tag}}' 2>/dev/null | while read -r ref; do
    if [ "${ref%:*}" = "$name" ] && [ "$ref" != "$1" ]; then buildah rmi "$ref" >/dev/null 2>&1 || true; fi
  done
  buildah rmi --prune >/dev/null 2>&1 || true # the untagged images those tags leave
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
  from_rootfs "$LOCAL_BASE_IMAGE" "$base"
  from_rootfs "$LOCAL_TOOLS_IMAGE" "$tools"
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

# detect_tool: the builder, unless --tool or $CONTAINER_TOOL named one: docker when its daemon answers
# (a docker client alone cannot build), else podman, else buildah. Local bases live in
# containers/storage, which podman and buildah share and docker does not.
detect_tool() {
  if [ -n "$tool" ]; then
    case "$tool" in docker|podman|buildah) ;; *) log "--tool $tool: say docker, podman or buildah"; exit 2 ;; esac
    command -v "$tool" >/dev/null || { log "$tool is not installed"; exit 1; }
  elif [ "$bases" = public ] && [ "$import" = 0 ] && command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    tool=docker
  elif command -v podman >/dev/null; then tool=podman
  elif command -v buildah >/dev/null; then tool=buildah
  else
    log "no image builder: install docker, podman or buildah"; exit 1
  fi
  if [ "$tool" = docker ] && { [ "$bases" = local ] || [ "$import" = 1 ]; }; then
    log "--bases local and --import need buildah or podman (their images live in containers/storage)"; exit 1
  fi
  log "building with $tool"
}

# loopback REF: true when REF's registry is on this machine (127.0.0.0/8, localhost, [::1]): pushed
# to over plain HTTP without a TLS check, as docker does by default for those addresses.
loopback() {
  case "${1%%/*}" in 127.*|localhost|localhost:*|\[::1\]*) return 0 ;; esac
  return 1
}

# push_image IMAGE [DEST]: pushes IMAGE (to DEST, default the same name) and prints DEST@DIGEST.
push_image() {
  local image=$1 dest=${2:-$1} digest f
  log "push $dest"
  case "$tool" in
    docker)
      [ "$dest" = "$image" ] || docker tag "$image" "$dest"
      docker push -q "$dest" >&2
      digest=$(docker inspect -f '{{range .RepoDigests}}{{println .}}{{end}}' "$dest" | awk -F@ -v n="${dest%:*}" '$1 == n {print $2; exit}') ;;
    podman|buildah)
      f=$(mktemp /tmp/tslc-digest.XXXXXX)
      local tls=()
      ! loopback "$dest" || tls=(--tls-verify=false)
      "$tool" push -q "${tls[@]}" --digestfile "$f" "$image" "docker://$dest" >&2
      digest=$(cat "$f"); rm -f "$f" ;;
  esac
  [ -n "$digest" ] || { log "no digest for $dest after the push"; exit 1; }
  echo "$dest@$digest"
}

# archive_image IMAGE FILE: writes IMAGE as an OCI archive and prints IMAGE@DIGEST (the manifest's
# digest, from the archive's index.json; docker save writes an OCI image layout since Docker 25).
archive_image() {
  local image=$1 file=$2 digest
  rm -f "$file"
  case "$tool" in
    docker) docker save -o "$file" "$image" ;;
    podman|buildah) "$tool" push -q "$image" "oci-archive:$file:$image" >/dev/null ;;
  esac
  digest=$(tar -xOf "$file" index.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifests"][0]["digest"])')
  echo "$image@$digest"
}

# stage DIR: the build context of --binaries prebuilt (the Dockerfile's header): prebuilt/bin,
# prebuilt/bench-bin and prebuilt/dataplane.
stage() {
  local ctx=$1/prebuilt name flags
  mkdir -p "$ctx/bin" "$ctx/bench-bin" "$ctx/dataplane"
  # The binaries report the images' version (a tag that is no version, as the upgrade test's
  # previous-<version>-<commit>, leaves them hack/version.sh's).
  flags=$(VERSION=$version "$repo/hack/ldflags.sh" 2>/dev/null || "$repo/hack/ldflags.sh")
  for name in manager agent tickstack-xdp-cni tickstack-xdpd-plugin tickstack tickstack-bench tickstack-bench-upload; do
    if [ -n "${bins[$name]:-}" ]; then
      cp "${bins[$name]}" "$ctx/bin/$name"
    elif [ -d "$repo/cmd/$name" ] && ls "$repo/cmd/$name"/*.go >/dev/null 2>&1; then
      log "go build ./cmd/$name"
      (cd "$repo" && CGO_ENABLED=0 go build -trimpath ${gotags:+-tags "$gotags"} -ldflags "-s -w $flags" -o "$ctx/bin/$name" "./cmd/$name")
    fi
  done
  # The benchmark pods run tickstack-bench, then tickstack-bench-upload writes its results into the
  # run's ConfigMap (docs/benchmark.md).
  for name in tickstack tickstack-bench tickstack-bench-upload; do
    [ ! -f "$ctx/bin/$name" ] || mv "$ctx/bin/$name" "$ctx/bench-bin/$name"
  done
  "$repo/hack/images/dataplane-outputs.sh" "$repo/dataplane/build" "$ctx/dataplane"
}

# build_target TARGET CONTEXT: builds the Dockerfile's TARGET as $registry/tickstack-TARGET:$tag.
build_target() {
  local target=$1 ctx=$2 image="$registry/tickstack-$1:$tag" old="" b
  local args=(--build-arg "VERSION=$version" --build-arg "BINARIES=$binaries"
    --build-arg "COMMIT=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
    --build-arg "MODIFIED=$([ -z "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo false || echo true)"
    --build-arg "DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)")
  if [ "$binaries" = prebuilt ]; then
    case "$target" in
      manager) b=(manager) ;; agent) b=(agent tickstack-xdp-cni tickstack-xdpd-plugin) ;; *) b=() ;;
    esac
    for name in "${b[@]}"; do
      [ -f "$ctx/prebuilt/bin/$name" ] || { log "no binary for $name: give --bin $name=PATH or add ./cmd/$name"; exit 1; }
    done
  fi
  [ "$bases" = public ] || args+=(--build-arg "BASE_IMAGE=$LOCAL_BASE_IMAGE" --build-arg "TOOLS_IMAGE=$LOCAL_TOOLS_IMAGE")
  log "$tool build --target $target -> $image"
  case "$tool" in
    docker) docker build -q --target "$target" -t "$image" "${args[@]}" -f "$repo/Dockerfile" "$ctx" >/dev/null ;;
    podman|buildah)
      old=$(image_id "$image")
      "$tool" build -q --layers=false --target "$target" -t "$image" "${args[@]}" -f "$repo/Dockerfile" "$ctx" >/dev/null
      drop_replaced "$old" "$image" ;;
  esac
  # What the caller gets: the pushed name and digest, the release's archive, or the local archive.
  if [ "$push" = 1 ]; then
    push_image "$image"
    [ "$tool" = docker ] || drop_older_tags "$image"
  fi
  if [ -n "$archive_dir" ]; then
    archive_image "$image" "$archive_dir/tickstack-$target-$tag.oci.tar"
  fi
  # The local archive: what --import loads, and what is printed when nothing else is asked.
  if [ "$import" = 1 ]; then
    to_archive "$image" "$oci/$target.tar" >/dev/null
  fi
  if [ "$push" = 0 ] && [ -z "$archive_dir" ]; then
    if [ "$import" = 1 ]; then echo "$oci/$target.tar"; else to_archive "$image" "$oci/$target.tar"; fi
  fi
}

# build_third_party TARGET: the image of an upstream component, from hack/third-party.sh's binaries,
# laid out as the upstream image is (its manifests run it unchanged).
build_third_party() {
  local target=$1 name version bindir image out c old
  image=$(third_party_ref "$target")
  name=${image#localhost/}; name=${name%:*}
  version=${image##*:}
  bindir=$("$repo/hack/third-party.sh" "$name") || exit 1
  bindir=${bindir#*=}
  out="$oci/$name.tar"
  if has_image "$image" "$bindir/.built" && [ -s "$out" ] && [ "$out" -nt "$bindir/.built" ]; then
    echo "$out"
    return
  fi
  build_bases
  log "$image from $bindir"
  old=$(image_id "$image")
  # The device plugin needs the PCI name database (Debian's pci.ids), which the tools base has.
  if [ "$target" = sriovdp ]; then c=$(buildah from -q "$LOCAL_TOOLS_IMAGE"); else c=$(buildah from -q "$LOCAL_BASE_IMAGE"); fi
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

# third_party_ref TARGET: the local name of an upstream component's image, localhost/NAME:VERSION.
third_party_ref() {
  local name
  case "$1" in
    multus) name=multus-cni ;;
    nfd) name=node-feature-discovery ;;
    sriovdp) name=sriov-network-device-plugin ;;
  esac
  echo "localhost/$name:$(awk -F'\t' -v n="$name" '!/^#/ && $1 == n {print $2}' "$repo/hack/third-party.lock")"
}

out=()      # what is printed: pushed or archived names with digests, else local archive paths
imports=()  # archives for the local cluster (--import)
ctx=""
for t in "${targets[@]}"; do
  case "$t" in
    pause|base|multus|nfd|sriovdp)
      # made with buildah alone (from scratch, from the local bases)
      [ -n "$tool" ] || tool=buildah ;;
  esac
  case "$t" in
    pause) a=$(build_pause); out+=("$a"); imports+=("$a") ;;
    base) build_bases ;;
    multus|nfd|sriovdp)
      a=$(build_third_party "$t")
      imports+=("$a")
      if [ "$push" = 1 ]; then
        ref=$(third_party_ref "$t")
        out+=("$(push_image "$ref" "$registry/${ref#localhost/}")")
      else
        out+=("$a")
      fi ;;
    manager|agent|bench)
      if [ "$build" = 0 ]; then
        [ "$push" = 1 ] || { log "--no-build without --push does nothing"; exit 2; }
        [ -n "$tool" ] || detect_tool
        out+=("$(push_image "$registry/tickstack-$t:$tag")")
        continue
      fi
      if [ -z "$ctx" ]; then
        detect_tool
        if [ "$bases" = local ]; then build_bases; fi
        if [ "$binaries" = prebuilt ]; then
          ctx=$(mktemp -d /tmp/tslc-ctx.XXXXXX)
          trap 'rm -rf "$ctx"' EXIT
          stage "$ctx"
        else
          ctx=$repo   # the sources, less .dockerignore's build outputs
        fi
      fi
      [ -z "$archive_dir" ] || mkdir -p "$archive_dir"
      lines=$(build_target "$t" "$ctx")
      mapfile -t lines <<< "$lines"
      out+=("${lines[@]}")
      [ "$import" = 0 ] || imports+=("$oci/$t.tar") ;;
    *) log "unknown target $t"; exit 2 ;;
  esac
done
if [ "$import" = 1 ] && [ ${#imports[@]} -gt 0 ]; then
  "$repo/hack/local-cluster" import "${imports[@]}"
fi
printf '%s\n' "${out[@]}"
