#!/usr/bin/env bash
# Makes the Debian root filesystem tarballs the images start from, with debootstrap from Debian's own
# packages (no image registry is reachable here). Slow the first time (minutes), so the tarballs are
# cached outside the repo and reused while present:
#   $TICKSTACK_CACHE/images/debian-<suite>-base.tar    minbase, for the manager
#   $TICKSTACK_CACHE/images/debian-<suite>-tools.tar   base + the node tools the agent and bench need
# The mirror is read from this machine's apt sources at run time (never written in the repo).
#
# Usage: hack/images/debian-rootfs.sh [base|tools|all]   (prints the tarball paths)
set -euo pipefail

cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}/images
suite=${DEBIAN_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}
# The node tools: hack/images/tools-packages.txt (the Dockerfile's public build installs the same list).
tools_pkgs=${TOOLS_PACKAGES:-$(sed -e 's/#.*//' "$(dirname "$0")/tools-packages.txt" | xargs)}
mkdir -p "$cache"

# apt_mirror prints the first mirror of this machine's apt sources that serves $suite (deb822 or
# one-line format), so the repo never names a mirror.
# Only binary sources (Types: deb) count: hack/lwip-source.sh adds a deb-src file beside them. The
# first match is kept in a variable, not cut with head, so that pipefail never sees a SIGPIPE.
apt_mirror() {
  local f u=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && [ -z "$u" ] || continue
    u=$(awk -v s="$suite" '
      /^Types:/ {deb=0; for (i=2;i<=NF;i++) if ($i=="deb") deb=1}
      /^URIs:/ {u=$2} /^Suites:/ {for (i=2;i<=NF;i++) if ($i==s) ok=1}
      /^$/ {if (ok && deb && u) {print u; done=1; exit} ok=0; deb=0; u=""}
      END {if (!done && ok && deb && u) print u}' "$f")
  done
  [ -n "$u" ] || u=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk -v s="$suite" '$1=="deb" && $3==s && !found {print $2; found=1}')
  [ -n "$u" ] && { echo "$u"; return; }
  echo "debian-rootfs: no apt source for $suite found" >&2; return 1
}

# pack DIR TAR: a reproducible-enough tarball of a rootfs without the apt caches.
pack() {
  rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/* "$1"/var/log/* 2>/dev/null || true
  tar --numeric-owner --xattrs -C "$1" -cf "$2.tmp" . && mv "$2.tmp" "$2"
}

build_base() {
  local out="$cache/debian-$suite-base.tar"
  [ -s "$out" ] && { echo "$out"; return; }
  local mirror; mirror=$(apt_mirror)
  local root; root=$(mktemp -d /tmp/tslc-rootfs.XXXXXX)
  echo "debian-rootfs: debootstrap $suite (minbase) into $root" >&2
  debootstrap --variant=minbase --components=main "$suite" "$root" "$mirror" >&2
  # Point the image's apt at the same suite so a later image may add packages.
  pack "$root" "$out"
  rm -rf "$root"
  echo "$out"
}

build_tools() {
  local out="$cache/debian-$suite-tools.tar"
  # Rebuilt when the package list changes (the list is kept beside the tarball).
  if [ -s "$out" ] && [ "$(cat "$out.pkgs" 2>/dev/null)" = "$tools_pkgs" ]; then echo "$out"; return; fi
  local base; base=$(build_base)
  local mirror; mirror=$(apt_mirror)
  local root; root=$(mktemp -d /tmp/tslc-rootfs.XXXXXX)
  tar --numeric-owner -C "$root" -xf "$base"
  echo "debian-rootfs: adding $tools_pkgs" >&2
  # debootstrap leaves sources.list naming the mirror it used; chroot apt needs /proc and resolv.conf.
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  mount -t proc proc "$root/proc"
  trap 'umount "$root/proc" 2>/dev/null || true' RETURN
  chroot "$root" apt-get update -qq >&2
  local pkgs
  read -ra pkgs <<<"$tools_pkgs"
  DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
  chroot "$root" apt-get clean
  umount "$root/proc"
  : > "$root/etc/resolv.conf"
  pack "$root" "$out"
  echo "$tools_pkgs" > "$out.pkgs"
  rm -rf "$root"
  echo "$out"
}

case "${1:-all}" in
  base) build_base ;;
  tools) build_tools ;;
  all) build_base; build_tools ;;
  *) echo "usage: $0 [base|tools|all]" >&2; exit 2 ;;
esac
