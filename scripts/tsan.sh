#!/bin/bash
# Builds lemrt with ThreadSanitizer in BUILD_DIR (default build-tsan) and runs
# the whole ctest suite (all but the fuzz targets) under it; docs/development.md,
# "Sanitizers". Not part of CI: the build and run take about 50 min
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
# Open MPI's progress engine copies a message into our buffers on whichever
# thread polls (the TensorCore thread's all-reduce may deliver the SparseCore
# executor's all-to-all and vice versa), inside its uninstrumented mca_*
# plugins, and synchronizes through atomics TSan cannot see. tests/tsan.supp's
# `race:mca_` matches such a report only when TSan can restore the plugin's
# stack, which it sometimes cannot. So the interceptors called from the
# messaging plugins are ignored (called_from_lib), which needs them to stay
# loaded: Open MPI dlcloses them at MPI_Finalize, and TSan treats unloading an
# ignored library as fatal. Preloading them into the ranks (Open MPI's
# mca_base_env_list sets LD_PRELOAD for every process mpirun starts, not for
# mpirun itself) keeps them loaded.
plugins="$(dirname "$(find /usr/lib -name mca_pml_ob1.so -print -quit)")"
supp="$logs/tsan.supp"
cp "$root/tests/tsan.supp" "$supp"
preload=""
for p in btl_vader btl_self pml_ob1 coll_tuned coll_basic coll_libnbc; do
  if [ -e "$plugins/mca_$p.so" ]; then
    echo "called_from_lib:mca_$p.so" >> "$supp"
    preload="$preload${preload:+:}$plugins/mca_$p.so"
  fi
done
export OMPI_MCA_mca_base_env_list="LD_PRELOAD=$preload"
# history_size=7 (the largest) for the remaining library frames.
export TSAN_OPTIONS="suppressions=$supp history_size=7 log_path=$logs/report"
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
