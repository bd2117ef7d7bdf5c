#!/usr/bin/env bash
# Installs dependencies, checks the formatting of the files listed in
# scripts/format_files.txt, builds lemrt (Release, build/) and runs every test,
# multi-rank tests through mpirun included; then the unit tests under
# ASan+UBSan (LEMRT_CI_SANITIZE=0 skips them) and each fuzz target for 20 s
# (LEMRT_CI_FUZZ=0 skips them), both in one clang build, build-asan/. After
# each stage it prints the stage's wall time and CPU time (user+sys of the
# processes it ran: on a shared machine the CPU time is the stable figure).
# Exit code = result.
set -euo pipefail
source "$(dirname "$0")/env.sh"
stage_wall=$SECONDS
stage_cpu=0
# stage_done NAME: the wall and CPU seconds since the previous stage ended.
stage_done() {
  local cpu times_file
  times_file="$(mktemp)"
  times > "$times_file"  # not in a subshell: it would report its own children
  cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/);
    printf "%.1f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$times_file")
  rm -f "$times_file"
  echo "test.sh: stage $1: $((SECONDS - stage_wall)) s wall," \
    "$(awk -v a="$cpu" -v b="$stage_cpu" 'BEGIN { printf "%.0f", a - b }') CPU s (user+sys)"
  stage_wall=$SECONDS
  stage_cpu=$cpu
}
"$LEMRT_ROOT/scripts/install_deps.sh"
# Formatting first: seconds, and a misformatted file fails before the build.
"$LEMRT_ROOT/scripts/format_check.sh"
stage_done "deps+format"
# LEMRT_CI_RELEASE=0 skips the Release build and suite (to run the later
# stages alone).
if [ "${LEMRT_CI_RELEASE:-1}" != 0 ]; then
  lemrt_build "$LEMRT_ROOT/build"
  stage_done "release build"
  # Several tests at a time (LEMRT_CTEST_JOBS, default 4 — on 2 cores: most
  # of a multi-rank test's time is start-up and waiting); tests whose timing
  # must not share the machine are RUN_SERIAL (tests/CMakeLists.txt).
  (cd "$LEMRT_ROOT/build" && ctest --output-on-failure --timeout 900 -j "${LEMRT_CTEST_JOBS:-4}" "$@")
  stage_done "release ctest"
fi

# One clang ASan+UBSan build (build-asan/) serves the two last stages: the
# unit tests under the sanitizers and the fuzz targets (-DLEMRT_FUZZ=ON: the
# targets are libFuzzer binaries, and their corpus replays, unit tests too,
# run through libFuzzer). Only the `unit` tests' targets are built, not the
# tools, MPI tests or benchmarks; UBSan findings are fatal, leaks too;
# warnings are errors as in the GCC Release build. The build targets a second
# x86-64 level (x86-64-v3 where the machine has AVX-512, else x86-64-v2:
# lemrt_other_isa_level), so every CI run tests the unit tests on two
# instruction sets and with two compilers (GCC Release at -march=native);
# scripts/isa_levels.sh tests each level (docs/development.md, "Instruction
# sets"). Then scripts/fuzz.sh runs each fuzz target for 20 s in the same
# build (its configure and build find it up to date).
# LEMRT_CI_SANITIZE=0 skips the unit tests, LEMRT_CI_FUZZ=0 the fuzzing.
asan="$LEMRT_ROOT/build-asan"
if [ "${LEMRT_CI_SANITIZE:-1}" != 0 ]; then
  level="$(lemrt_other_isa_level)"
  echo "test.sh: ASan+UBSan unit tests built by clang with -march=$level"
  # Ninja, not Makefiles: make builds the goals of one `cmake --build
  # --target A B ...` one after another (CMake's top Makefile is .NOTPARALLEL),
  # so each one-file test target compiled with the other core idle.
  # A build-asan/ of the earlier GCC + Makefiles stage cannot be reconfigured: start afresh.
  if [ -f "$asan/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$asan/CMakeCache.txt"; then
    rm -rf "$asan"
  fi
  cmake -G Ninja -S "$LEMRT_ROOT" -B "$asan" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$(lemrt_clang)" -DLEMRT_SANITIZE=address -DLEMRT_FUZZ=ON \
    -DLEMRT_WERROR=ON -DLEMRT_MARCH="$level" >/dev/null
  mapfile -t unit_targets < <(lemrt_unit_targets "$asan")
  cmake --build "$asan" -j "$LEMRT_JOBS" --target "${unit_targets[@]}"
  stage_done "sanitizer build"
  (cd "$asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     ctest -L unit --output-on-failure --timeout 900 -j "$LEMRT_JOBS")
  stage_done "sanitizer ctest"
fi
if [ "${LEMRT_CI_FUZZ:-1}" != 0 ]; then
  LEMRT_JOBS=2 "$LEMRT_ROOT/scripts/fuzz.sh" "$asan"
  stage_done "fuzz"
fi
