#!/usr/bin/env bash
# Fetches and unpacks Debian's lwip source package (the lwIP that Debian's liblwip0 is built from,
# with Debian's patches), which dataplane/Makefile compiles with tickstack's own lwipopts.h
# (docs/dataplane-design.md, "The lwIP build"). The version and the sha256 of every file are
# pinned in hack/lwip-source.sha256; the unpacked tree is cached:
#   $TICKSTACK_CACHE/lwip-<version>/src
# Idempotent: a verified tree is reused. Needs root only when apt has no deb-src index yet: it then
# adds /etc/apt/sources.list.d/tickstack-src.sources, a deb-src copy of the machine's own
# debian.sources entries (the mirror is read from that file at run time, never written in the repo),
# and runs apt-get update.
#
# Usage: hack/lwip-source.sh          fetch, verify, unpack (prints nothing when cached)
#        hack/lwip-source.sh --dir    print the unpacked tree's path, fetch nothing
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sums="$here/lwip-source.sha256"
# the version: from the pinned .dsc's name (lwip_<version>.dsc)
version=$(awk '$2 ~ /^lwip_.*\.dsc$/ {v=$2; sub(/^lwip_/, "", v); sub(/\.dsc$/, "", v); print v}' "$sums")
[ -n "$version" ] || { echo "lwip-source: no lwip_<version>.dsc line in $sums" >&2; exit 1; }
cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}/lwip-$version
if [ "${1:-}" = --dir ]; then echo "$cache/src"; exit 0; fi
[ $# -eq 0 ] || { echo "usage: $0 [--dir]" >&2; exit 2; }
# the stamp holds the checksums the tree was unpacked from
if [ -f "$cache/src/.tickstack-unpacked" ] && cmp -s "$sums" "$cache/src/.tickstack-unpacked"; then
  exit 0
fi

src_list=/etc/apt/sources.list.d/tickstack-src.sources
has_source() { apt-cache showsrc lwip 2>/dev/null | grep -qxF "Version: $version"; }
if ! has_source; then
  if [ "$(id -u)" != 0 ]; then
    echo "lwip-source: apt has no deb-src index for lwip $version: run hack/install-deps.sh as root" >&2
    exit 1
  fi
  if [ ! -f "$src_list" ]; then
    deb=/etc/apt/sources.list.d/debian.sources
    [ -f "$deb" ] || { echo "lwip-source: $deb missing: no Debian apt source to copy as deb-src" >&2; exit 1; }
    # every "Types: deb" stanza of debian.sources, as deb-src
    awk 'BEGIN {RS=""; ORS="\n\n"} /(^|\n)Types:[^\n]*deb/ {
           gsub(/(^|\n)#[^\n]*/, ""); sub(/Types:[^\n]*/, "Types: deb-src"); print }' "$deb" >"$src_list.tmp"
    grep -q '^URIs:' "$src_list.tmp" || { rm -f "$src_list.tmp"; echo "lwip-source: no deb stanza in $deb" >&2; exit 1; }
    mv "$src_list.tmp" "$src_list"
    echo "lwip-source: added $src_list (deb-src of $deb)" >&2
  fi
  apt-get update -qq
  has_source || { echo "lwip-source: apt offers no lwip source $version (apt-cache showsrc lwip)" >&2; exit 1; }
fi

mkdir -p "$cache"
dl=$(mktemp -d "$cache/dl.XXXXXX")
trap 'rm -rf "$dl"' EXIT
# apt's sandbox user cannot write into root's cache: let it write here
chmod 0755 "$dl"
(cd "$dl" && apt-get source -qq --download-only "lwip=$version" >/dev/null 2>"$dl/apt.log") ||
  { cat "$dl/apt.log" >&2; echo "lwip-source: apt-get source lwip=$version failed" >&2; exit 1; }
(cd "$dl" && sha256sum --quiet --strict -c "$sums") ||
  { echo "lwip-source: checksums differ from $sums: not unpacked" >&2; exit 1; }
rm -rf "$cache/src"
dpkg-source --no-check -x "$dl/lwip_$version.dsc" "$cache/src" >/dev/null
cp "$sums" "$cache/src/.tickstack-unpacked"
echo "lwip-source: lwip $version unpacked into $cache/src" >&2
