#!/usr/bin/env bash
# lemrt_train logs exactly one WARNING (rank 0 only) when ranks per
# node x busy threads per rank (TensorCore + SparseCore executor + host workers
# + tile workers) exceed the cores, naming the counts and what to lower; a
# sequential run (one busy thread per rank) gets none. Needs LEMRT_BIN and
# LEMRT_SRC.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run() {  # run NAME OVERRIDE
  if ! timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
       --config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" \
       --override="training { steps: 2 eval_samples: 0 } $2" > "$work/$1.log" 2>&1; then
    echo "FAIL run $1"; cat "$work/$1.log"; exit 1
  fi
}
fails=0
# 2 ranks x (1 + 1 + 64 host workers + 2 tile workers) threads: more than any CI machine's cores.
run busy "sparse_core { disable_full_embedding_pipelining: false pipeline_without_threads: false host_worker_threads: 64 tile_threads: 3 }"
n="$(grep -c '^W.*cores are oversubscribed' "$work/busy.log")"
if [ "$n" != 1 ]; then
  echo "FAIL expected one oversubscription warning, got $n"; cat "$work/busy.log"; fails=1
fi
for want in "2 ranks on this node x 68 busy threads per rank" "host_worker_threads (now 64" \
            "tile_threads (now 3)" "disable_full_embedding_pipelining: true"; do
  if ! grep '^W.*cores are oversubscribed' "$work/busy.log" | grep -qF "$want"; then
    echo "FAIL the warning does not say '$want'"; grep '^W' "$work/busy.log"; fails=1
  fi
done
# One busy thread per rank: 2 threads, which no machine running this test lacks.
run sequential "sparse_core { disable_full_embedding_pipelining: true maximum_parallel_iterations: 0 }"
if grep -q 'oversubscribed' "$work/sequential.log"; then
  echo "FAIL a sequential run warned"; grep '^W' "$work/sequential.log"; fails=1
fi
# The plan's own choices never warn: 1 rank on every CPU gets the executor
# thread and, with 2 or more cores, a host worker sharing them on purpose.
if ! timeout 120 mpirun --oversubscribe --bind-to none -np 1 "$LEMRT_BIN/lemrt_train" \
     --config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" \
     --override="training { steps: 2 eval_samples: 0 }" > "$work/planned.log" 2>&1; then
  echo "FAIL run planned"; cat "$work/planned.log"; exit 1
fi
if grep -q 'oversubscribed' "$work/planned.log"; then
  echo "FAIL the plan's own threads warned"; grep '^W' "$work/planned.log"; fails=1
fi
[ "$fails" = 0 ] && echo "PASS oversubscription warning"
exit "$fails"
