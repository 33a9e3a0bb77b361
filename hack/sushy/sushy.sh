#!/usr/bin/env bash
# Runs OpenStack's sushy-tools Redfish BMC emulator on a loopback port, for the internal/bmc tests and
# for trying BIOS settings by hand. The emulator uses libvirt's in-memory test:///default driver: no
# daemon, no VM, one fake domain whose BIOS attributes live in the emulator process.
#
#   sushy.sh venv
#       Makes sure the cached venv exists (built once from requirements.txt) and prints its path.
#       Cache: ${TICKSTACK_SUSHY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack/sushy}/venv-<key>.
#   sushy.sh start DIR [--tls] [--user NAME] [--parent PID]
#       Writes the emulator config (and with --tls a self-signed certificate, DIR/ca.pem) into DIR,
#       starts the emulator on a free 127.0.0.1 port, waits until it answers and prints its URL.
#       With --user, HTTP basic auth is on: the password is read from the SUSHY_PASSWORD environment
#       variable (never from the command line) and stored only as a bcrypt hash in DIR/htpasswd.
#       DIR/pid, DIR/url and DIR/emulator.log are written; the emulator runs until `stop`, or, with
#       --parent, until process PID is gone (so a killed test run leaves no emulator behind).
#   sushy.sh stop DIR
#       Stops the emulator started in DIR (SIGTERM, then SIGKILL) and removes DIR/pid.
#
# Exit codes: 0 ok, 1 failure, 2 usage, 3 a prerequisite (python3 venv, libvirt-dev, pkg-config,
# openssl) is missing: run hack/install-deps.sh as root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
reqs="$here/requirements.txt"
python=${SUSHY_PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=$(command -v python3 || true)

die() { echo "sushy.sh: $*" >&2; exit 1; }
missing() { echo "sushy.sh: missing prerequisite: $* (run hack/install-deps.sh as root)" >&2; exit 3; }

cache_root() { echo "${TICKSTACK_SUSHY_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tickstack/sushy}"; }

venv_path() {
  local key
  key=$( { cat "$reqs"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-12)
  echo "$(cache_root)/venv-$key"
}

cmd_venv() {
  [ -n "$python" ] && [ -x "$python" ] || missing "python3"
  "$python" -c 'import venv, ensurepip' 2>/dev/null || missing "python3-venv"
  command -v pkg-config >/dev/null || missing "pkg-config"
  local venv
  venv=$(venv_path)
  if [ -f "$venv/.complete" ]; then echo "$venv"; return; fi
  pkg-config --exists libvirt || missing "libvirt-dev"
  "$python" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    || missing "python3-dev"
  mkdir -p "$(cache_root)"
  # One builder at a time: concurrent test runs wait here for the first one's venv.
  exec 9>"$venv.lock"
  flock 9
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    echo "sushy.sh: building $venv (once; later runs reuse it)" >&2
    local start=$SECONDS
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$reqs" >&2 \
      || { rm -rf "$venv"; die "pip install failed (see above)"; }
    "$venv/bin/python" -c 'import libvirt, sushy_tools.emulator.main, bcrypt' \
      || { rm -rf "$venv"; die "venv built but its modules do not import"; }
    touch "$venv/.complete"
    echo "sushy.sh: venv ready in $((SECONDS - start)) s" >&2
  fi
  exec 9>&-
  echo "$venv"
}

free_port() {
  "$1/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

cmd_start() {
  local dir=${1:-}; shift || true
  [ -n "$dir" ] || { echo "usage: sushy.sh start DIR [--tls] [--user NAME]" >&2; exit 2; }
  local tls=0 user="" parent=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --tls) tls=1 ;;
      --user) user=${2:?--user needs a name}; shift ;;
      --parent) parent=${2:?--parent needs a PID}; shift ;;
      *) echo "sushy.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
  done
  local venv
  venv=$(cmd_venv)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/pid" ] || die "$dir/pid exists: an emulator already runs there (sushy.sh stop $dir)"

  local scheme=http conf="$dir/emulator.conf"
  {
    echo "SUSHY_EMULATOR_LIBVIRT_URI = 'test:///default'"
    echo "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'"
  } >"$conf.base"
  if [ "$tls" = 1 ]; then
    command -v openssl >/dev/null || missing "openssl"
    # A self-signed certificate for 127.0.0.1 that is its own CA: clients trust it through DIR/ca.pem.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -subj "/CN=tickstack sushy test BMC" -addext "subjectAltName=IP:127.0.0.1" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null || die "openssl could not make a certificate"
    chmod 600 "$dir/key.pem"
    cp "$dir/cert.pem" "$dir/ca.pem"
    echo "SUSHY_EMULATOR_SSL_CERT = '$dir/cert.pem'" >>"$conf.base"
    echo "SUSHY_EMULATOR_SSL_KEY = '$dir/key.pem'" >>"$conf.base"
    scheme=https
  fi
  if [ -n "$user" ]; then
    [ -n "${SUSHY_PASSWORD:-}" ] || die "--user needs the password in SUSHY_PASSWORD"
    # bcrypt is the only hash sushy's auth file accepts; 4 rounds keep each request's check cheap.
    (umask 077; SUSHY_USER="$user" "$venv/bin/python" "$here/htpasswd.py" >"$dir/htpasswd")
    echo "SUSHY_EMULATOR_AUTH_FILE = '$dir/htpasswd'" >>"$conf.base"
  fi

  # The port is free when picked; another process may take it before the emulator binds, so retry.
  local port pid url
  for _ in 1 2 3 4 5; do
    port=$(free_port "$venv")
    { cat "$conf.base"; echo "SUSHY_EMULATOR_LISTEN_PORT = $port"; } >"$conf"
    url="$scheme://127.0.0.1:$port"
    setsid "$venv/bin/python" -m sushy_tools.emulator.main --config "$conf" \
      >"$dir/emulator.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/pid"
    local deadline=$((SECONDS + 30))
    while [ $SECONDS -lt $deadline ]; do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      # The service root needs no auth; -k only for this liveness probe, clients verify with ca.pem.
      if curl -fsk --max-time 2 -o /dev/null "$url/redfish/v1/"; then
        echo "$url" >"$dir/url"
        rm -f "$conf.base"
        if [ -n "$parent" ]; then
          # Watchdog: stop the emulator once the parent process is gone.
          # shellcheck disable=SC2016 # the script's $1 and $2 are bash -c's arguments
          setsid bash -c 'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done; kill "$2" 2>/dev/null' \
            watchdog "$parent" "$pid" >/dev/null 2>&1 </dev/null &
          echo $! >"$dir/watchdog.pid"
        fi
        echo "$url"
        return 0
      fi
      sleep 0.2
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$dir/pid"
    if grep -q "Address already in use" "$dir/emulator.log"; then continue; fi
    break
  done
  tail -n 20 "$dir/emulator.log" >&2 || true
  die "emulator did not answer on $url"
}

cmd_stop() {
  local dir=${1:?usage: sushy.sh stop DIR}
  [ -f "$dir/pid" ] || return 0
  local pid
  pid=$(cat "$dir/pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pid"
  if [ -f "$dir/watchdog.pid" ]; then
    kill "$(cat "$dir/watchdog.pid")" 2>/dev/null || true
    rm -f "$dir/watchdog.pid"
  fi
}

case "${1:-}" in
  venv) cmd_venv ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  *) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
