#!/bin/sh
# Copies the dataplane's runtime outputs from its build directory into a directory of an image:
# libraries, BPF objects and tools at the top of dataplane/build, not its objects, test and fuzz
# programs or corpora. Run by hack/images/build.sh (staging prebuilt outputs) and by the Dockerfile's
# dataplane stage (after building them), so both images carry the same files.
# Usage: dataplane-outputs.sh BUILD_DIR DEST_DIR   (POSIX sh: the build stage has no bash guarantee)
set -eu
src=$1 dst=$2
mkdir -p "$dst"
for f in "$src"/*; do
  [ -f "$f" ] || continue
  case "$(basename "$f")" in
    *.bpf.o) cp "$f" "$dst/" ;;
    test_*|fuzz_*|*.h|*.o) ;;
    *.so|*.so.*) cp "$f" "$dst/" ;;
    *) if [ -x "$f" ]; then cp "$f" "$dst/"; fi ;;
  esac
done
