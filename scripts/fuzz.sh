#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang, ASan+UBSan) into
# build-fuzz/, or BUILD_DIR (scripts/test.sh passes its clang ASan+UBSan
# build-asan/, configured with LEMRT_FUZZ=ON and built: configure and build
# are then no-ops), and runs each for LEMRT_FUZZ_SECONDS (default 20) on a
# scratch copy of its committed seed corpus, reporting the executions run. A crash,
# leak, sanitizer report or timeout fails the script and leaves the input in
# build-fuzz/artifacts/<target>/ (add it to tests/fuzz/regressions/<target>/
# with the fix). Usage: scripts/fuzz.sh [BUILD_DIR] [TARGET...]
set -euo pipefail
source "$(dirname "$0")/env.sh"
dir="${1:-$LEMRT_ROOT/build-fuzz}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(criteo_reader binary_reader config_loader checkpoint)
seconds="${LEMRT_FUZZ_SECONDS:-20}"
cmake -S "$LEMRT_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$(lemrt_clang)" \
  -DLEMRT_FUZZ=ON >/dev/null
cmake --build "$dir" -j "$LEMRT_JOBS" --target "${targets[@]/%/_fuzzer}"

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for t in "${targets[@]}"; do
  corpus="$dir/corpus/$t"
  artifacts="$dir/artifacts/$t"
  rm -rf "$corpus"; mkdir -p "$corpus" "$artifacts"
  log="$dir/fuzz-$t.log"
  # New inputs go to the scratch corpus (first directory); the committed seeds
  # are read only.
  if "$dir/bin/${t}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len=4096 -print_final_stats=1 -artifact_prefix="$artifacts/" \
       "$corpus" "$LEMRT_ROOT/tests/fuzz/corpus/$t" > "$log" 2>&1; then
    execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    cov=$(grep 'cov:' "$log" | tail -n 1 | sed 's/.*cov: \([0-9]*\).*/\1/')
    echo "fuzz $t: ok, ${execs:-?} executions in ${seconds}s, coverage ${cov:-?} edges"
  else
    echo "fuzz $t: FAILED (log $log, inputs in $artifacts):"
    grep -m1 -A30 'ERROR:\|runtime error:\|==ERROR\|deadly signal' "$log" || tail -n 40 "$log"
    status=1
  fi
done
exit "$status"
