#!/usr/bin/env bash
# Downloads the header-only Debian packages the build needs (CLI11, nlohmann-json, Eigen) into .deb/, for
# a GPU machine that has no network: scripts/gpu_check.sh unpacks them there (dpkg -x) when CMake
# cannot find the packages. Run on a machine with Debian's package lists (apt-get update).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deb
cd .deb
apt-get download libcli11-dev nlohmann-json3-dev libeigen3-dev
ls -l
