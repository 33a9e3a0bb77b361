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
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # chrony is installed for its chronyd, which the PTP tests start as a competing clock daemon; on
  # a host booted with systemd the package starts its service, which must not steer this machine's
  # clock. A chrony the machine had before is left alone.
  if [[ " ${missing[*]} " == *" chrony "* ]] && command -v systemctl >/dev/null; then
    systemctl disable --now chrony >/dev/null 2>&1 || true
  fi
fi
"$here/lwip-source.sh"
"$here/promtool.sh" >/dev/null
