#!/usr/bin/env bash
# Builds the unit tests (label `unit`) once per x86-64 level and runs them:
# x86-64-v2 (SSE4.2), x86-64-v3 (AVX2 + FMA) and, where this CPU has
# AVX-512 (F, BW, CD, DQ, VL), x86-64-v4; native is what scripts/test.sh
# builds. Build dirs: build-isa-<level>/. Usage: scripts/isa_levels.sh [LEVEL...]
# Exit code = result (non-zero when any level fails).
set -euo pipefail
source "$(dirname "$0")/env.sh"
levels=("$@")
if [ ${#levels[@]} -eq 0 ]; then
  levels=(x86-64-v2 x86-64-v3)
  v4=1
  for flag in avx512f avx512bw avx512cd avx512dq avx512vl; do
    grep -qw "$flag" /proc/cpuinfo || v4=0
  done
  [ "$v4" = 1 ] && levels+=(x86-64-v4)
fi
status=0
for level in "${levels[@]}"; do
  dir="$LEMRT_ROOT/build-isa-$level"
  cmake -S "$LEMRT_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DLEMRT_MARCH="$level" >/dev/null
  mapfile -t targets < <(lemrt_unit_targets "$dir")
  cmake --build "$dir" -j "$LEMRT_JOBS" --target "${targets[@]}" >/dev/null
  if (cd "$dir" && ctest -L unit --output-on-failure --timeout 900 >"$dir/ctest.log" 2>&1); then
    echo "isa_levels: $level: $(grep -m1 'tests passed' "$dir/ctest.log")"
  else
    echo "isa_levels: $level: FAILED (log $dir/ctest.log)"
    grep -E 'Failed|FAILED' "$dir/ctest.log" | head -20
    status=1
  fi
done
exit $status
