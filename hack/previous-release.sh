#!/usr/bin/env bash
# Builds the previous release of tickstack (hack/previous-release: its version and commit) for the
# upgrade e2e: its chart and its binaries from that commit's sources (git archive, so the clone needs
# the history), its images with this tree's image build (hack/images/build.sh --bin: the release's
# manager, agent and benchmark binaries on this tree's bases). Everything is kept under
# $TICKSTACK_CACHE/previous/<version>-<commit>, so a second run only checks.
#
# Usage: hack/previous-release.sh [--import]
#   --import   import the images into the local cluster's containerd (hack/images/build.sh --import)
# Prints three lines: version=X.Y.Z, chart=<directory of the release's chart>, tag=<image tag>.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
read -r version commit < <(grep -v '^#' "$repo/hack/previous-release")
[ -n "${commit:-}" ] || { echo "previous-release: hack/previous-release names no version and commit" >&2; exit 1; }
cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}/previous/$version-${commit:0:12}
tag=previous-$version-${commit:0:12}
import=()
[ "${1:-}" != --import ] || import=(--import)
log() { echo "previous-release: $*" >&2; }

if [ ! -f "$cache/built" ]; then
  if ! git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "previous-release: commit $commit (release $version) is not in this clone: fetch the history (git fetch --unshallow, or clone without --depth)" >&2
    exit 1
  fi
  rm -rf "$cache"
  mkdir -p "$cache/src" "$cache/bin"
  log "sources of $version from $commit"
  git -C "$repo" archive "$commit" | tar -x -C "$cache/src"
  for name in manager agent tickstack tickstack-bench tickstack-bench-upload; do
    [ -d "$cache/src/cmd/$name" ] || continue
    log "go build ./cmd/$name ($version)"
    (cd "$cache/src" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache/bin/$name" "./cmd/$name")
  done
  touch "$cache/built"
fi

bins=()
for f in "$cache"/bin/*; do
  bins+=(--bin "$(basename "$f")=$f")
done
log "images localhost/tickstack-{manager,agent,bench}:$tag"
"$repo/hack/images/build.sh" --tag "$tag" "${bins[@]}" "${import[@]}" manager agent bench >/dev/null
echo "version=$version"
echo "chart=$cache/src/charts/tickstack"
echo "tag=$tag"
