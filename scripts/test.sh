#!/usr/bin/env bash
# Installs dependencies, builds lemrt (Release, build/) and runs every test,
# multi-rank tests through mpirun included; then (LEMRT_CI_SANITIZE=1) the unit
# tests under ASan+UBSan (build-asan/) and each fuzz target for 20 s
# (build-fuzz/).
# Exit code = result.
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$LEMRT_ROOT/scripts/install_deps.sh"
lemrt_build "$LEMRT_ROOT/build"
cd "$LEMRT_ROOT/build"
ctest --output-on-failure --timeout 900 "$@"

# ASan+UBSan build of the unit tests (label `unit`: only their targets are
# built, -j2, to keep CI time down) with LEMRT_CI_SANITIZE=1 (off by default
# until a full run of it has been timed and seen green), then the fuzz
# targets for a bounded time (LEMRT_CI_FUZZ=0 skips them).
if [ "${LEMRT_CI_SANITIZE:-0}" != 0 ]; then
  asan="$LEMRT_ROOT/build-asan"
  cmake -S "$LEMRT_ROOT" -B "$asan" -DCMAKE_BUILD_TYPE=Release -DLEMRT_SANITIZE=address >/dev/null
  # Test name = target name (lemrt_cc_test), except X_fuzz_replay -> X_fuzzer.
  mapfile -t unit_targets < <(cd "$asan" && ctest -L unit --show-only=json-v1 | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tests"]:
    n = t["name"]
    print(n[:-len("_fuzz_replay")] + "_fuzzer" if n.endswith("_fuzz_replay") else n)' | sort -u)
  cmake --build "$asan" -j 2 --target "${unit_targets[@]}"
  (cd "$asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     ctest -L unit --output-on-failure --timeout 900)
fi
if [ "${LEMRT_CI_FUZZ:-1}" != 0 ]; then
  LEMRT_JOBS=2 "$LEMRT_ROOT/scripts/fuzz.sh" "$LEMRT_ROOT/build-fuzz"
fi
