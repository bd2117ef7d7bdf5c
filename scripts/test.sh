#!/usr/bin/env bash
# Installs dependencies, checks the formatting of the files listed in
# scripts/format_files.txt, builds lemrt (Release, build/) and runs every test,
# multi-rank tests through mpirun included; then the unit tests under
# ASan+UBSan (build-asan/; LEMRT_CI_SANITIZE=0 skips them) and each fuzz
# target for 20 s (build-fuzz/; LEMRT_CI_FUZZ=0 skips them).
# Exit code = result.
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$LEMRT_ROOT/scripts/install_deps.sh"
# Formatting first: seconds, and a misformatted file fails before the build.
"$LEMRT_ROOT/scripts/format_check.sh"
lemrt_build "$LEMRT_ROOT/build"
cd "$LEMRT_ROOT/build"
# Several tests at a time (LEMRT_CTEST_JOBS, default 4 — on 2 cores: most
# of a multi-rank test's time is start-up and waiting); tests whose timing
# must not share the machine are RUN_SERIAL (tests/CMakeLists.txt).
ctest --output-on-failure --timeout 900 -j "${LEMRT_CTEST_JOBS:-4}" "$@"

# ASan+UBSan build of the unit tests (label `unit`: only their targets are
# built, not the tools, MPI tests or benchmarks; UBSan findings are fatal,
# leaks too), then the fuzz targets for a bounded time. The sanitizer build
# targets a second x86-64 level (x86-64-v3 where the machine has AVX-512,
# else x86-64-v2: lemrt_other_isa_level), so every CI run tests the unit
# tests on two instruction sets; scripts/isa_levels.sh tests each level
# (docs/development.md, "Instruction sets").
if [ "${LEMRT_CI_SANITIZE:-1}" != 0 ]; then
  asan="$LEMRT_ROOT/build-asan"
  level="$(lemrt_other_isa_level)"
  echo "test.sh: ASan+UBSan unit tests built with -march=$level"
  cmake -S "$LEMRT_ROOT" -B "$asan" -DCMAKE_BUILD_TYPE=Release -DLEMRT_SANITIZE=address \
    -DLEMRT_MARCH="$level" >/dev/null
  mapfile -t unit_targets < <(lemrt_unit_targets "$asan")
  cmake --build "$asan" -j "$LEMRT_JOBS" --target "${unit_targets[@]}"
  (cd "$asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     ctest -L unit --output-on-failure --timeout 900 -j "$LEMRT_JOBS")
fi
if [ "${LEMRT_CI_FUZZ:-1}" != 0 ]; then
  LEMRT_JOBS=2 "$LEMRT_ROOT/scripts/fuzz.sh" "$LEMRT_ROOT/build-fuzz"
fi
