#!/usr/bin/env bash
# Installs lemrt's build and test dependencies from Debian packages. Idempotent
# and quiet when everything is already there. With arguments, installs those
# packages instead (scripts/install_torch.sh uses that).
set -euo pipefail

PACKAGES=(
  cmake g++ make python3
  ninja-build  # the ASan+UBSan build of scripts/test.sh
  openmpi-bin libopenmpi-dev
  libeigen3-dev
  libdnnl-dev  # oneDNN: the TensorCore's GEMMs (device/tensorcore/gemm.h)
  libprotobuf-dev protobuf-compiler
  libgoogle-glog-dev libgflags-dev
  libgtest-dev libgmock-dev
  libabsl-dev
  libbenchmark-dev
  libisal-dev  # CRC-32C of the binary and TFRecord formats (Debian 12 has no libcrc32c-dev)
  zlib1g-dev   # gzip-compressed TFRecord files
  python3-matplotlib
  iproute2 procps  # ip, tc, pgrep: the emulated cluster (scripts/cluster_emulator.sh) and its tests
  clang-format-14  # scripts/format_check.sh
  clang-14 libclang-rt-14-dev libomp-14-dev  # libFuzzer + sanitizers (scripts/fuzz.sh); OpenMP for oneDNN's calls under clang
)
[ $# -gt 0 ] && PACKAGES=("$@")

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install_deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
