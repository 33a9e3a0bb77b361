#!/usr/bin/env bash
# Gets the upstream components tickstack runs but does not own (Multus, the SR-IOV network device
# plugin, node-feature-discovery, and containerd 2 with crictl for the per-pod controls over NRI,
# which Debian's containerd 1.6 lacks) at the versions pinned in hack/third-party.lock, checks them,
# and builds their binaries (issues #19, #42; docs/third-party.md).
#
# Sources, per kind in the lock file:
#   archive  NAME-VERSION.tar.gz from $TICKSTACK_THIRD_PARTY_DIR, else ../shared/third_party beside the
#            repository (or beside the local repository a clone came from), else the archives this
#            cache verified before; its sha256 checked against the lock. Without the archive, a
#            shallow git clone of the tag, its commit checked against the lock.
#   module   the Go module at VERSION, its h1: sum checked against the lock by `go mod download`; a
#            nested module the lock names (NAME/sub) is put at its directory, where the parent's
#            replace directive expects it.
# Each component is built inside its own module (its go.mod, its replace directives, Multus from its
# vendor directory), never as a dependency of tickstack.
#
# Usage: hack/third-party.sh [COMPONENT...]   COMPONENT: multus-cni | sriov-network-device-plugin |
#        node-feature-discovery | containerd | cri-tools (default: all). Prints NAME=BINDIR for each, one a line.
# Output: $TICKSTACK_CACHE/third-party/NAME-VERSION/{src,bin} (built once, reused while present).
# Images: hack/images/build.sh multus nfd (on the project's Debian bases).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}/third-party
lock="$repo/hack/third-party.lock"
mkdir -p "$cache/archives"
# Where archives are looked for, in order: TICKSTACK_THIRD_PARTY_DIR; ../shared/third_party beside
# the repository, or beside the repository a local clone was made from (its origin); the archives
# this cache already verified.
archive_dirs=()
[ -z "${TICKSTACK_THIRD_PARTY_DIR:-}" ] || archive_dirs+=("$TICKSTACK_THIRD_PARTY_DIR")
archive_dirs+=("$repo/../shared/third_party")
origin=$(git -C "$repo" config --get remote.origin.url 2>/dev/null || true)
[ -z "$origin" ] || [ ! -d "$origin" ] || archive_dirs+=("$origin/../shared/third_party")
archive_dirs+=("$cache/archives")
log() { echo "third-party: $*" >&2; }
die() { log "$*"; exit 1; }

# One build at a time per cache (the local cluster and CI may ask at once).
exec 9>"$cache/.lock"
flock 9

# field NAME COLUMN: a column of NAME's line in the lock (1 name, 2 version, 3 kind, 4 source,
# 5 commit, 6 checksum).
field() {
  awk -F'\t' -v n="$1" -v c="$2" '!/^#/ && $1 == n {print $c; found=1} END {exit !found}' "$lock" ||
    die "$1 is not in $lock"
}

# unpack_archive NAME DEST: the pinned release source of NAME into DEST.
unpack_archive() {
  local name=$1 dest=$2 version source commit sum tmp
  version=$(field "$name" 2) source=$(field "$name" 4) commit=$(field "$name" 5) sum=$(field "$name" 6)
  tmp=$(mktemp -d "$cache/.unpack.XXXXXX")
  local archive="" d
  for d in "${archive_dirs[@]}"; do
    if [ -f "$d/$name-$version.tar.gz" ]; then archive="$d/$name-$version.tar.gz"; break; fi
  done
  if [ -n "$archive" ]; then
    local got; got=sha256:$(sha256sum "$archive" | cut -d' ' -f1)
    [ "$got" = "$sum" ] || { rm -rf "$tmp"; die "$archive: checksum $got, the lock pins $sum; replace the archive with the one of tag $version"; }
    log "$name $version from $archive ($sum)"
    [ "$archive" -ef "$cache/archives/$name-$version.tar.gz" ] || cp "$archive" "$cache/archives/"
    tar -xzf "$archive" -C "$tmp"
    # An archive unpacks into one directory named like it.
    local top; top=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d)
    [ "$(echo "$top" | wc -l)" = 1 ] || { rm -rf "$tmp"; die "$archive does not unpack into one directory"; }
    mv "$top" "$tmp/src"
  else
    log "$name $version: no $name-$version.tar.gz in ${archive_dirs[*]}; cloning the tag from $source"
    git clone -q --depth 1 --branch "$version" "https://$source.git" "$tmp/src" ||
      { rm -rf "$tmp"; die "cannot clone $source at $version: put $name-$version.tar.gz (git archive of the tag) in a directory named by TICKSTACK_THIRD_PARTY_DIR"; }
    local head; head=$(git -C "$tmp/src" rev-parse HEAD)
    [ "$head" = "$commit" ] || { rm -rf "$tmp"; die "$source tag $version is commit $head, the lock pins $commit"; }
    rm -rf "$tmp/src/.git"
  fi
  mv "$tmp/src" "$dest"
  rm -rf "$tmp"
}

# module_dir NAME: downloads the pinned module NAME, checks its sum, prints its directory.
module_dir() {
  local name=$1 version source sum json got dir
  version=$(field "$name" 2) source=$(field "$name" 4) sum=$(field "$name" 6)
  json=$(go mod download -json "$source@$version") || die "go mod download $source@$version failed: $json"
  got=$(sed -n 's/^\t"Sum": "\(.*\)",$/\1/p' <<<"$json")
  dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$json")
  [ "$got" = "$sum" ] || die "$source@$version: sum $got, the lock pins $sum"
  echo "$dir"
}

# unpack_module NAME DEST: the module and the nested modules the lock lists under NAME/.
unpack_module() {
  local name=$1 dest=$2 tmp sub dir
  dir=$(module_dir "$name")
  tmp=$(mktemp -d "$cache/.unpack.XXXXXX")
  cp -r "$dir" "$tmp/src"
  chmod -R u+w "$tmp/src"
  while read -r sub; do
    dir=$(module_dir "$sub")
    rm -rf "${tmp:?}/src/${sub#"$name"/}"
    mkdir -p "$(dirname "$tmp/src/${sub#"$name"/}")"
    cp -r "$dir" "$tmp/src/${sub#"$name"/}"
  done < <(awk -F'\t' -v n="$name/" '!/^#/ && index($1, n) == 1 {print $1}' "$lock")
  chmod -R u+w "$tmp/src"
  log "$name $(field "$name" 2) from the Go module $(field "$name" 4) ($(field "$name" 6))"
  mv "$tmp/src" "$dest"
  rm -rf "$tmp"
}

# build NAME: source and binaries of NAME; prints NAME=BINDIR.
build() {
  local name=$1 version kind work
  version=$(field "$name" 2) kind=$(field "$name" 3)
  work="$cache/$name-$version"
  # Rebuilt when its lock lines or this script (the recipe) change.
  local stamp="$work/bin/.built" want
  want="$(grep -P "^\Q$name\E(/|\t)" "$lock")
recipe $(sha256sum "$0" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$name=$work/bin"
    return
  fi
  rm -rf "$work"
  mkdir -p "$work"
  case "$kind" in
    archive) unpack_archive "$name" "$work/src" ;;
    module) unpack_module "$name" "$work/src" ;;
    *) die "$name: unknown kind $kind in $lock" ;;
  esac
  local commit; commit=$(field "$name" 5)
  mkdir -p "$work/bin"
  log "building $name $version"
  # Static binaries, as the upstream images ship them; the ldflags are the upstream Makefiles'.
  (
    cd "$work/src"
    export CGO_ENABLED=0
    case "$name" in
      multus-cni)
        local p=gopkg.in/k8snetworkplumbingwg/multus-cni.v4/pkg/multus
        go build -mod=vendor -trimpath -o "$work/bin/" \
          -ldflags "-s -w -X $p.version=$version -X $p.commit=$commit -X $p.gitTreeState=clean -X $p.releaseStatus=,released" \
          ./cmd/multus ./cmd/thin_entrypoint ./cmd/install_multus
        # install_multus copies it beside multus (the upstream build names it passthru).
        go build -mod=vendor -trimpath -o "$work/bin/passthru" -ldflags "-s -w" ./cmd/passthru-cni ;;
      sriov-network-device-plugin)
        go build -trimpath -tags no_openssl -ldflags "-s -w" -o "$work/bin/sriovdp" ./cmd/sriovdp ;;
      node-feature-discovery)
        # /host- is the prefix under which the upstream DaemonSet mounts the host's /boot, /etc,
        # /sys, /usr and /lib (the upstream image's CONTAINER_HOSTMOUNT_PREFIX).
        go build -trimpath -o "$work/bin/" \
          -ldflags "-s -w -X sigs.k8s.io/node-feature-discovery/pkg/version.version=$version -X sigs.k8s.io/node-feature-discovery/pkg/utils/hostpath.pathPrefix=/host-" \
          ./cmd/nfd-master ./cmd/nfd-worker ./cmd/nfd-gc ;;
      containerd)
        # The upstream static build (Makefile's STATIC=1): no btrfs snapshotter (it needs cgo),
        # the shim that runs runc (Debian's runc stays), and ctr.
        local p=github.com/containerd/containerd/v2/version
        [ "$commit" != - ] || commit=""
        go build -trimpath -tags "no_btrfs netgo osusergo static_build" -o "$work/bin/" \
          -ldflags "-s -w -X $p.Version=$version -X $p.Revision=$commit -X $p.Package=github.com/containerd/containerd/v2 -extldflags -static" \
          ./cmd/containerd ./cmd/containerd-shim-runc-v2 ./cmd/ctr ;;
      cri-tools)
        go build -trimpath -o "$work/bin/" \
          -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$version" ./cmd/crictl ;;
      *) die "no build recipe for $name" ;;
    esac
  ) >&2 || die "building $name $version failed"
  cp "$work/src/LICENSE" "$work/bin/LICENSE"
  echo "$want" >"$stamp"
  echo "$name=$work/bin"
}

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(multus-cni sriov-network-device-plugin node-feature-discovery containerd cri-tools)
for c in "${components[@]}"; do
  case "$c" in
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    */*) die "$c is part of ${c%%/*}, not a component" ;;
  esac
  build "$c"
done
