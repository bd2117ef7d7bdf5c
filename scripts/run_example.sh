#!/usr/bin/env bash
# Installs dependencies, builds lemrt (Release, build/), trains the example
# DLRM on 4 ranks and prints the result table. Extra arguments go to
# lemrt_train (e.g. --override='training { steps: 50 }').
set -euo pipefail
source "$(dirname "$0")/env.sh"
[[ "${LEMRT_RANKS:-4}" =~ ^[1-9][0-9]*$ ]] || { echo "run_example.sh: LEMRT_RANKS must be a positive integer, got '$LEMRT_RANKS'" >&2; exit 2; }
"$LEMRT_ROOT/scripts/install_deps.sh"
lemrt_build "$LEMRT_ROOT/build"
mkdir -p "$LEMRT_ROOT/out"
lemrt_fg mpirun -np "${LEMRT_RANKS:-4}" --bind-to none "$LEMRT_ROOT/build/bin/lemrt_train" \
  --config="$LEMRT_ROOT/examples/configs/dlrm_synthetic.pbtxt" \
  --summary_json="$LEMRT_ROOT/out/example_summary.json" "$@"
echo "summary JSON: out/example_summary.json"
