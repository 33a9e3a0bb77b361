#!/usr/bin/env bash
# Writes every artifact of one tickstack release into one folder (make release VERSION=x.y.z;
# docs/releasing.md):
#   tickstack-VERSION.tgz                     the Helm chart, version and appVersion VERSION
#   tickstack-VERSION-{linux-amd64,linux-arm64,darwin-arm64}
#                                             the CLI (cmd/tickstack), static, stamped with VERSION
#   tickstack-{manager,agent,bench}-VERSION.oci.tar
#                                             the images as OCI archives (hack/images/build.sh)
#   images-VERSION.txt                        each image as NAME:VERSION@DIGEST, the digest the chart's
#                                             <component>.imageDigest takes once pushed as it is
#   tickstack-VERSION.sbom.cdx.json           the Go modules' SBOM (CycloneDX, cyclonedx-gomod)
#   SHA256SUMS                                sha256sum of every file above (sha256sum -c SHA256SUMS)
#
# Usage: hack/release.sh --version x.y.z --out DIR [--bases public|local] [--no-images]
#   --no-images  leave out the image archives and their digests (the release test does, to stay
#                quick; a release never does)
# Needs $HELM and $CYCLONEDX_GOMOD (the Makefile builds both at pinned versions into bin/).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
version="" out="" bases=public images=1
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; shift ;;
    --out) out=$2; shift ;;
    --bases) bases=$2; shift ;;
    --no-images) images=0 ;;
    *) echo "release: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
log() { echo "release: $*" >&2; }
[ -n "$version" ] && [ -n "$out" ] || { log "--version and --out are required"; exit 2; }
# The same check as every other version: x.y.z or x.y.z-pre.
version=$(VERSION=$version "$repo/hack/version.sh")
: "${HELM:?set HELM to the pinned helm (make release builds it)}" "${CYCLONEDX_GOMOD:?set CYCLONEDX_GOMOD (make release builds it)}"
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -n "$(ls -A "$out")" ]; then log "$out is not empty: a release folder holds one release only"; exit 1; fi

log "chart $version"
"$HELM" package "$repo/charts/tickstack" --version "$version" --app-version "$version" -d "$out" >&2

flags=$(VERSION=$version "$repo/hack/ldflags.sh")
for platform in linux/amd64 linux/arm64 darwin/arm64; do
  log "tickstack CLI for $platform"
  (cd "$repo" && CGO_ENABLED=0 GOOS=${platform%/*} GOARCH=${platform#*/} \
    go build -trimpath -ldflags "-s -w $flags" -o "$out/tickstack-$version-${platform%/*}-${platform#*/}" ./cmd/tickstack)
done

if [ "$images" = 1 ]; then
  log "images (OCI archives)"
  "$repo/hack/images/build.sh" --version "$version" --bases "$bases" --archive-dir "$out" \
    manager agent bench > "$out/images-$version.txt"
  cat "$out/images-$version.txt" >&2
else
  log "images left out (--no-images)"
fi

log "SBOM of the Go modules (CycloneDX)"
(cd "$repo" && "$CYCLONEDX_GOMOD" mod -json -licenses=false -output "$out/tickstack-$version.sbom.cdx.json" . >&2)

# shellcheck disable=SC2094 # find leaves SHA256SUMS out of what it lists
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
log "$out:"
ls -l "$out" >&2
