#!/usr/bin/env bash
# Opt-in: installs the public SparseCore library (jax-tpu-embedding, whose
# wheel carries its C++ input preprocessing) from the Python registry (pip)
# into a virtual environment, for scripts/compare_preprocess.sh. Never called
# by CI, scripts/test.sh or install_deps.sh. Idempotent: a second run checks
# the versions and returns.
#
#   scripts/install_jax_sc.sh            # install (about 400 MB: jax, jaxlib, flax)
#   scripts/install_jax_sc.sh --python   # print the environment's python if the
#                                        # pinned versions are installed there,
#                                        # else exit 1 (installs nothing)
#
# Env: JAX_SC_VENV (default ~/.cache/lemrt/jax-sc-<version>, outside the work
# tree so every checkout shares it).
set -euo pipefail

JAX_SC_VERSION=0.1.0
# Its requirements at the versions tried together.
JAX_SC_DEPS=(jax==0.10.2 jaxlib==0.10.2 flax==0.12.8 numpy==2.4.6)

VENV="${JAX_SC_VENV:-$HOME/.cache/lemrt/jax-sc-$JAX_SC_VERSION}"
PY="$VENV/bin/python"

NAME=install_jax_sc
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
describe() { echo "jax-tpu-embedding $JAX_SC_VERSION"; }

# Exit 0 when $PY imports the library's preprocessing binding at the pinned
# version.
installed() {
  [ -x "$PY" ] || return 1
  "$PY" - "$JAX_SC_VERSION" <<'PY' 2>/dev/null
import sys
from importlib import metadata
from jax_tpu_embedding.sparsecore.lib.core import pybind_input_preprocessing
have = metadata.version("jax-tpu-embedding")
if have != sys.argv[1]:
    sys.exit(f"installed {have}, pinned {sys.argv[1]}")
pybind_input_preprocessing.preprocess_sparse_dense_matmul_input
PY
}

source "$(dirname "$0")/peer_venv.sh"
peer_venv_start "$@"
echo "install_jax_sc: installing into $VENV"
"$PY" -m pip install --quiet --disable-pip-version-check \
  "jax-tpu-embedding==$JAX_SC_VERSION" "${JAX_SC_DEPS[@]}"
if ! installed; then
  echo "install_jax_sc: installed, but $PY cannot import jax_tpu_embedding $JAX_SC_VERSION's preprocessing" >&2
  exit 1
fi
peer_venv_done
