#!/bin/bash
# Builds lemrt with ThreadSanitizer in BUILD_DIR (default build-tsan) and runs
# the whole ctest suite (all but the fuzz targets) under it; README "Failure
# behaviour", Sanitizers. Not part of CI: the build and run take about 50 min
# on 2 cores. Exit status non-zero when a test fails or TSan reported anything
# (reports land in BUILD_DIR/tsan-logs, one file per process).
#
#   scripts/tsan.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(realpath -m "${1:-$root/build-tsan}")"
source "$root/scripts/env.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" -DLEMRT_SANITIZE=thread > /dev/null
make -C "$build" -j"${LEMRT_JOBS:-2}"
logs="$build/tsan-logs"
rm -rf "$logs" && mkdir -p "$logs"
# history_size=7 (the largest): a race whose other side ran in Open MPI's
# uninstrumented plugins (its progress engine copies a message into our buffer
# on whichever thread polls) is only matched by tests/tsan.supp's `race:mca_`
# when TSan can still restore that side's stack; with the default history it
# sometimes cannot and reports it against a lemrt frame.
export TSAN_OPTIONS="suppressions=$root/tests/tsan.supp history_size=7 log_path=$logs/report"
# Error paths must stop every rank within 30 s; TSan runs ~5-10x slower.
export LEMRT_TEST_TIME_SCALE="${LEMRT_TEST_TIME_SCALE:-5}"
rc=0
ctest --test-dir "$build" -j2 -E fuzz --output-on-failure || rc=$?
if compgen -G "$logs/report.*" > /dev/null; then
  echo "ThreadSanitizer reports (in $logs):"
  grep -h "^SUMMARY" "$logs"/report.* | sort | uniq -c
  rc=1
fi
exit "$rc"
