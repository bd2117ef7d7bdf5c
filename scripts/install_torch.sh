#!/usr/bin/env bash
# Opt-in: installs Debian's PyTorch and a threaded OpenBLAS (without which
# torch falls back to the reference BLAS, ~10x slower) for
# scripts/compare_torch.sh. Not called by install_deps.sh, so CI never
# downloads torch. Idempotent and quiet when already installed.
set -euo pipefail
PACKAGES=(python3-torch python3-numpy libopenblas0-pthread)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install_torch: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
