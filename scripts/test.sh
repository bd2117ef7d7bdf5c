#!/usr/bin/env bash
# Installs dependencies, builds lemrt (Release, build/) and runs every test,
# multi-rank tests through mpirun included. Exit code = result.
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$LEMRT_ROOT/scripts/install_deps.sh"
lemrt_build "$LEMRT_ROOT/build"
cd "$LEMRT_ROOT/build"
ctest --output-on-failure --timeout 900 "$@"
