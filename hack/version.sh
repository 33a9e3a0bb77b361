#!/usr/bin/env bash
# Prints the version of this tree's build: what the binaries report (hack/ldflags.sh), the images'
# tag (hack/images/build.sh, make images) and the chart's version and appVersion when it is packaged
# (make chart, make release).
#   - $VERSION when set (make release VERSION=x.y.z sets it; it must be semantic: x.y.z[-pre]);
#   - the chart's appVersion when HEAD is tagged v<appVersion> and the tree has no uncommitted change;
#   - otherwise a development version that no release can carry: the next minor version after the
#     chart's appVersion, "-dev.g" and the commit, and ".dirty" when the tree has uncommitted changes
#     (0.2.0-dev.g3b9920f1c2d4, 0.2.0-dev.g3b9920f1c2d4.dirty). The "g" keeps the identifier
#     alphanumeric (semver forbids a numeric one with a leading zero, which a commit can be).
# docs/images.md and docs/releasing.md explain the scheme.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
semver='^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'
if [ -n "${VERSION:-}" ]; then
  [[ $VERSION =~ $semver ]] || { echo "version: VERSION=$VERSION is not a semantic version (x.y.z or x.y.z-pre)" >&2; exit 2; }
  echo "$VERSION"
  exit 0
fi
app=$(awk -F'"' '/^appVersion:/ {print $2}' "$repo/charts/tickstack/Chart.yaml")
[[ $app =~ $semver ]] || { echo "version: charts/tickstack/Chart.yaml appVersion \"$app\" is not x.y.z" >&2; exit 1; }
commit=$(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || true)
dirty=
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=.dirty
if [ -n "$commit" ] && [ -z "$dirty" ] && git -C "$repo" tag --points-at HEAD 2>/dev/null | grep -qxF "v$app"; then
  echo "$app"
  exit 0
fi
IFS=. read -r major minor _ <<< "${app%%-*}"
echo "$major.$((minor + 1)).0-dev.g${commit:-unknown}$dirty"
