# Sourced by every CLI test (tests/tools/*.sh, run as `bash test.sh <clustersim binary> <source
# dir>`): sets bin, src and a scratch folder tmp (removed at exit), counts failures with
# `fail "why"`, and `finish NAME` ends the test: exit 1 with the count if any check failed.
set -u
bin="$1"
src="${2:-}"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
finish() {
  if [ "$fails" -ne 0 ]; then
    echo "$1: $fails failure(s)" >&2
    exit 1
  fi
  echo "$1: ok"
  exit 0
}
