#!/usr/bin/env bash
# Opt-in: installs Debian's PyTorch and a threaded OpenBLAS (without which
# torch falls back to the reference BLAS, ~10x slower) for
# scripts/compare_torch.sh, plus what the reference DLRM it can also run
# needs (tqdm, scikit-learn). Not called by install_deps.sh's default list,
# so CI never downloads torch. Idempotent and quiet when already installed.
set -euo pipefail
exec "$(dirname "$0")/install_deps.sh" python3-torch python3-numpy libopenblas0-pthread \
  python3-tqdm python3-sklearn
