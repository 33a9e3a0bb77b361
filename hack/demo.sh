#!/usr/bin/env bash
# The main job: bring up the local cluster, install tickstack, apply the sample profile, run the
# benchmark and print the results. The local cluster (issue 7) is still being built; until it lands
# this script says so and exits non-zero rather than pretending.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x hack/local-cluster ]; then
  echo "demo: the local cluster (hack/local-cluster) has not landed yet; 'make check' runs everything that exists" >&2
  exit 2
fi
echo "demo: the end-to-end flow on the local cluster is not wired yet (see the README's Status table)" >&2
exit 2
