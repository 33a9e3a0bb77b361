#!/usr/bin/env bash
# Prints the -ldflags that stamp a tickstack binary with its release (the chart's appVersion), the
# git commit (with "+changes" semantics through Modified when the tree has uncommitted changes) and
# the build time (UTC), read by internal/version. Used by `make build`, hack/images/build.sh and the
# version test; the Go toolchain's own VCS stamp is not relied on (GOFLAGS may say -buildvcs=false).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
pkg=github.com/tickstack/tickstack/internal/version
release=$(awk -F'"' '/^appVersion:/ {print $2}' "$repo/charts/tickstack/Chart.yaml")
commit=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
modified=false
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] || modified=true
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "-X $pkg.Version=${release:-dev} -X $pkg.Commit=$commit -X $pkg.Modified=$modified -X $pkg.Date=$date"
