#!/usr/bin/env bash
# hack/lint.sh shell|python [FILE...]: shellcheck (settings in .shellcheckrc) over every shell script of
# the repository, or flake8 (settings in .flake8) over every Python file; with FILEs, over those alone
# (test/lint shows each fails on a known finding). make lint runs both, and the dataplane's C under
# stricter warnings (make -C dataplane lint).
set -euo pipefail
cd "$(dirname "$0")/.."

# files KIND: the tracked files of KIND (sh or python): named *.sh or *.py, or without a dot in their
# name and a sh, bash or python shebang (.ci/run, hack/local-cluster). test/lint/testdata holds the
# fixtures that must fail.
files() {
  local f first
  git ls-files -z | while IFS= read -r -d '' f; do
    case $f in test/lint/testdata/*) continue ;; esac
    [ -f "$f" ] || continue
    case $f in
      *.sh) [ "$1" = sh ] && echo "$f"; continue ;;
      *.py) [ "$1" = python ] && echo "$f"; continue ;;
    esac
    case ${f##*/} in *.*) continue ;; esac
    first=$(head -n 1 "$f" | tr -d '\0')
    case $first in
      '#!'*python*) [ "$1" = python ] && echo "$f" ;;
      '#!'*bash* | '#!'*/sh | '#!'*' sh') [ "$1" = sh ] && echo "$f" ;;
    esac
  done
  return 0
}

kind=${1:-}
[ $# -gt 0 ] && shift
case $kind in
shell)
  command -v shellcheck >/dev/null || { echo "lint: shellcheck missing: make deps" >&2; exit 1; }
  if [ $# -eq 0 ]; then mapfile -t list < <(files sh); set -- "${list[@]}"; fi
  shellcheck --version | sed -n 's/^version: /lint: shellcheck /p'
  # a few files a process, on every CPU (harness.sh pulls in the case files it sources)
  printf '%s\0' "$@" | xargs -0 -n 4 -P "$(nproc)" shellcheck
  echo "lint: shellcheck: $# files clean"
  ;;
python)
  command -v flake8 >/dev/null || { echo "lint: flake8 missing: make deps" >&2; exit 1; }
  if [ $# -eq 0 ]; then mapfile -t list < <(files python); set -- "${list[@]}"; fi
  flake8 "$@"
  echo "lint: flake8 $(flake8 --version | awk '{print $1; exit}'): $# files clean"
  ;;
*)
  echo "usage: hack/lint.sh shell|python [FILE...]" >&2
  exit 2
  ;;
esac
