#!/usr/bin/env bash
# Opt-in: installs TorchRec with FBGEMM's CPU build from the Python registry
# (pip) into a virtual environment, for scripts/compare_torch.sh's TorchRec
# column (scripts/torchrec_dlrm.py). Never called by CI, scripts/test.sh or
# install_deps.sh. Idempotent: a second run checks the versions and returns.
#
#   scripts/install_torchrec.sh            # install (about 5.5 GB, see below)
#   scripts/install_torchrec.sh --python   # print the environment's python if
#                                          # the pinned versions are installed
#                                          # there, else exit 1 (installs nothing)
#
# Env: TORCHREC_VENV (default ~/.cache/lemrt/torchrec-<versions>, outside the
# work tree so every checkout shares it).
#
# Versions are pinned to one matching set: FBGEMM and TorchRec are released
# together for one PyTorch release (FBGEMM 1.9 / TorchRec 1.9 with PyTorch
# 2.14). Two things about the registry's packages shape the install:
#  - torch from the registry is its CUDA build on Linux x86_64 (the CPU-only
#    build lives on PyTorch's own index, which this project does not use) and
#    needs its ~4 GB of NVIDIA libraries to import at all (without them:
#    "ImportError: libcufile.so.0: cannot open shared object file"), though a
#    CPU run never uses the GPU;
#  - torchrec's metadata requires fbgemm-gpu, the CUDA build, which installs
#    into the same fbgemm_gpu package as fbgemm-gpu-cpu and would replace it;
#    so torchrec goes in with --no-deps and its other requirements are listed
#    here (pip check then names only that fbgemm-gpu).
set -euo pipefail

TORCH_VERSION=2.14.1
FBGEMM_VERSION=1.9.0
TORCHREC_VERSION=1.9.2
# torchrec's other requirements at the versions tried together; numpy for
# fbgemm-gpu-cpu.
TORCHREC_DEPS=(tensordict==0.15.3 torchmetrics==1.0.3 tqdm==4.70.1 pyre-extensions==0.0.32
               numpy==2.4.6)

VENV="${TORCHREC_VENV:-$HOME/.cache/lemrt/torchrec-$TORCHREC_VERSION-fbgemm-$FBGEMM_VERSION-torch-$TORCH_VERSION}"
PY="$VENV/bin/python"

NAME=install_torchrec
usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
describe() {
  echo "TorchRec $TORCHREC_VERSION, FBGEMM (CPU) $FBGEMM_VERSION, torch $TORCH_VERSION"
}

# Exit 0 when $PY imports torch, fbgemm_gpu and torchrec at the pinned
# versions and FBGEMM's CPU embedding operator is registered.
installed() {
  [ -x "$PY" ] || return 1
  "$PY" - "$TORCH_VERSION" "$FBGEMM_VERSION" "$TORCHREC_VERSION" <<'PY' 2>/dev/null
import sys
import torch, fbgemm_gpu, torchrec
want = sys.argv[1:]
have = [torch.__version__.split("+")[0], fbgemm_gpu.__version__, torchrec.__version__]
if have != want:
    sys.exit(f"installed {have}, pinned {want}")
torch.ops.fbgemm.split_embedding_codegen_lookup_sgd_function_cpu  # FBGEMM's CPU kernels
PY
}

source "$(dirname "$0")/peer_venv.sh"
peer_venv_start "$@"
echo "install_torchrec: installing into $VENV (about 5.5 GB; torch's CUDA build pulls NVIDIA libraries)"
PIP=("$PY" -m pip install --quiet --disable-pip-version-check)
"${PIP[@]}" "torch==$TORCH_VERSION" "fbgemm-gpu-cpu==$FBGEMM_VERSION" "${TORCHREC_DEPS[@]}"
"${PIP[@]}" --no-deps "torchrec==$TORCHREC_VERSION"
if ! installed; then
  echo "install_torchrec: installed, but $PY cannot import torch/fbgemm_gpu/torchrec at the pinned versions:" >&2
  "$PY" -c "import torch, fbgemm_gpu, torchrec; print(torch.__version__, fbgemm_gpu.__version__, torchrec.__version__)" >&2 || true
  exit 1
fi
peer_venv_done
