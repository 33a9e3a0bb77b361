#!/usr/bin/env bash
# Gets promtool, which test/chart runs on the chart's PrometheusRule (`promtool check rules`, `promtool
# test rules`; docs/monitoring.md), from Debian's prometheus package at the version pinned in
# hack/promtool.sha256: the .deb is fetched with `apt-get download` (nothing is installed, no service
# starts), its sha256 checked against the pin, and promtool alone extracted (dpkg-deb -x) into
#   $TICKSTACK_CACHE/promtool-<version>/promtool
# and printed. Idempotent: a binary extracted from the pinned package is reused. Needs root only when
# apt's index lacks the pinned version (it then runs apt-get update).
#
# Usage: hack/promtool.sh    prints promtool's path (fetches it when the cache lacks it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sums="$here/promtool.sha256"
arch=$(dpkg --print-architecture)
# the pinned .deb of this architecture: prometheus_<version>_<arch>.deb
deb=$(awk -v a="$arch" '$2 ~ "^prometheus_.*_" a "\\.deb$" {print $2}' "$sums")
[ -n "$deb" ] || { echo "promtool: $sums pins no prometheus package for $arch" >&2; exit 1; }
version=${deb#prometheus_}
version=${version%_"$arch".deb}
cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}/promtool-$version
# the stamp holds the pinned line the binary was extracted from
pin=$(grep -F "  $deb" "$sums")
if [ -x "$cache/promtool" ] && [ "$(cat "$cache/.tickstack-extracted" 2>/dev/null)" = "$pin" ]; then
  echo "$cache/promtool"
  exit 0
fi

has_version() { apt-cache show "prometheus=$version" >/dev/null 2>&1; }
if ! has_version; then
  if [ "$(id -u)" != 0 ]; then
    echo "promtool: apt's index has no prometheus $version: run hack/install-deps.sh as root" >&2
    exit 1
  fi
  apt-get update -qq
  has_version || { echo "promtool: apt offers no prometheus $version (apt-cache policy prometheus)" >&2; exit 1; }
fi

mkdir -p "$cache"
dl=$(mktemp -d "$cache/dl.XXXXXX")
trap 'rm -rf "$dl"' EXIT
chmod 0755 "$dl"
(cd "$dl" && apt-get download -qq "prometheus=$version" >"$dl/apt.log" 2>&1) ||
  { cat "$dl/apt.log" >&2; echo "promtool: apt-get download prometheus=$version failed" >&2; exit 1; }
[ -f "$dl/$deb" ] || { ls "$dl" >&2; echo "promtool: apt-get download did not write $deb" >&2; exit 1; }
(cd "$dl" && echo "$pin" | sha256sum --quiet --strict -c -) ||
  { echo "promtool: $deb differs from the checksum in $sums: not extracted" >&2; exit 1; }
dpkg-deb -x "$dl/$deb" "$dl/root"
"$dl/root/usr/bin/promtool" --version >/dev/null ||
  { echo "promtool: the extracted promtool does not run" >&2; exit 1; }
install -m 0755 "$dl/root/usr/bin/promtool" "$cache/promtool"
echo "$pin" >"$cache/.tickstack-extracted"
echo "promtool: promtool $version extracted into $cache" >&2
echo "$cache/promtool"
