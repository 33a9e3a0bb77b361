#!/usr/bin/env bash
# Builds cmd/tickstack-cni (the local cluster's secondary-network meta-plugin) to the path given,
# when the source is newer than the binary. Usage: build-cni.sh OUT
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
if [ -x "$out" ] && [ -z "$(find "$repo/cmd/tickstack-cni" "$repo/go.mod" -newer "$out" -print -quit)" ]; then
  exit 0
fi
cd "$repo"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" ./cmd/tickstack-cni
mv "$out.tmp" "$out"
