#!/usr/bin/env bash
# Installs the Debian packages listed in hack/apt-packages.txt that are missing, then fetches the
# pinned lwIP source package the dataplane compiles (hack/lwip-source.sh) and promtool from the pinned
# prometheus package, which the chart's rule tests run (hack/promtool.sh). Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
want=$(sed -e 's/#.*//' -e '/^\s*$/d' "$here/apt-packages.txt" | awk '{print $1}')
missing=()
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "install-deps: missing ${missing[*]}; run as root" >&2; exit 1; fi
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || true
  # nginx and redis-server are installed for the dataplane's program tests, which run each server
  # with its own configuration in a test namespace; their packages would start a system-wide
  # service on the host's addresses. A policy-rc.d (Debian's invoke-rc.d policy hook) refuses every
  # service start during this install, unless the machine has its own policy; the services the
  # packages enabled are disabled below.
  policy=/usr/sbin/policy-rc.d
  own_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# hack/install-deps.sh: no service starts while it installs packages\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    own_policy=1
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ -n "$own_policy" ]; then rm -f "$policy"; trap - EXIT; fi
  for svc in nginx redis-server; do
    [[ " ${missing[*]} " == *" $svc "* ]] || continue
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
      systemctl disable --now "$svc" >/dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$svc" ]; then
      # no systemd: the policy kept the service from starting; update-rc.d keeps it from starting at boot
      update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
  done
  # chrony is installed for its chronyd, which the PTP tests start as a competing clock daemon; on
  # a host booted with systemd the package starts its service, which must not steer this machine's
  # clock. A chrony the machine had before is left alone.
  if [[ " ${missing[*]} " == *" chrony "* ]] && command -v systemctl >/dev/null; then
    systemctl disable --now chrony >/dev/null 2>&1 || true
  fi
fi
"$here/lwip-source.sh"
"$here/promtool.sh" >/dev/null
