#!/usr/bin/env bash
# Prints the -ldflags that stamp a tickstack binary with its version (hack/version.sh: $VERSION, the
# chart's appVersion on its release tag, else a development version such as 0.2.0-dev.g<commit>), the
# git commit (with "+changes" semantics through Modified when the tree has uncommitted changes) and
# the build time (UTC), read by internal/version. Used by `make build`, hack/images/build.sh and the
# version test; the Go toolchain's own VCS stamp is not relied on (GOFLAGS may say -buildvcs=false).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
pkg=github.com/tickstack/tickstack/internal/version
release=$("$repo/hack/version.sh")
commit=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
modified=false
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] || modified=true
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "-X $pkg.Version=${release:-dev} -X $pkg.Commit=$commit -X $pkg.Modified=$modified -X $pkg.Date=$date"
