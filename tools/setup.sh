#!/usr/bin/env bash
# Installs clustersim's build and test dependencies from Debian 12 packages.
# Usage: tools/setup.sh [--fuzz]. Idempotent and quiet: packages already installed are
# skipped; runs as root or through sudo.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libsimgrid-dev libboost-graph-dev libeigen3-dev libcli11-dev doctest-dev
  libyaml-cpp-dev nlohmann-json3-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin gnuplot-nox graphviz
  chromium    # renders `clustersim report` pages in the CTest report_cli (headless)
)
# --fuzz: also Clang and libFuzzer, for the fuzz targets (tests/fuzz/, CLUSTERSIM_FUZZ=ON).
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang-15 libfuzzer-15-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "tools/setup.sh: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "tools/setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq >/dev/null
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
