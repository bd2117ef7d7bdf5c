#!/usr/bin/env bash
# Host worker threads: the same 2-rank run, with an evaluation in the
# middle, ends with the same model checksum whether each step's host
# preprocessing runs inline (maximum_parallel_iterations: 0) or on 1 or 3 host
# worker threads with a queue of 1 or 4 steps, without and with forced
# minibatching (tight partition limits); results never depend on thread
# timing. On 3 ranks with hot rows, every thread knob at its fewest and at
# its most (tile, host worker and GEMM threads, queue depth, the threaded or
# threadless pipeline) gives one checksum too. Each summary must hold a checksum (16 hex digits,
# tests/summary_lib.sh) and the limited runs a minibatch count above 1.
# Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source "$LEMRT_SRC/tests/summary_lib.sh"
fails=0
for limits in "" "max_ids_per_partition: 10 max_unique_ids_per_partition: 8 allow_id_dropping: true"; do
  sums=()
  for variant in "0 1" "1 1" "4 3"; do
    read -r depth threads <<< "$variant"
    name="d${depth}t${threads}${limits:+_limited}"
    if ! timeout 200 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
         --config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" \
         --override="sparse_core { maximum_parallel_iterations: $depth host_worker_threads: $threads $limits }
                     training { steps: 12 eval_every: 5 eval_samples: 384 }" \
         --summary_json="$work/$name.json" > "$work/$name.log" 2>&1; then
      echo "FAIL run $name"; cat "$work/$name.log"; exit 1
    fi
    sum="$(checksum_of "$work/$name.json")" || exit 1
    sums+=("$sum")
  done
  mbs="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['preprocess']['max_minibatches'])" "$work/$name.json")"
  if [ -n "$limits" ] && ! [[ "$mbs" =~ ^[0-9]+$ && "$mbs" -gt 1 ]]; then
    echo "FAIL the tight limits did not force minibatching (max $mbs per step)"; fails=1
  fi
  for s in "${sums[@]}"; do
    if [ "$s" != "${sums[0]}" ]; then
      echo "FAIL checksums differ${limits:+ with limits}: ${sums[*]} (depth/threads 0/1 1/1 4/3)"
      fails=1
      break
    fi
  done
  [ "$fails" = 0 ] && echo "ok   inline, 1 and 3 workers, depth 1 and 4${limits:+ (limits, up to $mbs minibatches)}: checksum ${sums[0]}"
done
# Every thread knob at once, fewest against most, on 3 ranks (an odd world
# size; the runs above use 2): one checksum, with dense and hot-row
# all-reduces among 3 ranks and an evaluation in the middle.
fewest='sparse_core { tile_threads: 1 host_worker_threads: 0 maximum_parallel_iterations: 0
        pipeline_without_threads: true } tensor_core { gemm_threads: 1 }'
most='sparse_core { tile_threads: 5 host_worker_threads: 3 maximum_parallel_iterations: 4
      pipeline_without_threads: false } tensor_core { gemm_threads: 3 }'
sed 's/^tables { name: "a" vocab_size: 20000 dim: 16/& hot_rows: 50/' \
  "$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" > "$work/hot.pbtxt"
three=()
for name in fewest most; do
  if ! timeout 200 mpirun --oversubscribe --bind-to none -np 3 "$LEMRT_BIN/lemrt_train" \
       --config="$work/hot.pbtxt" \
       --override="${!name} training { steps: 12 eval_every: 5 eval_samples: 384 }" \
       --summary_json="$work/np3_$name.json" > "$work/np3_$name.log" 2>&1; then
    echo "FAIL run np3_$name"; cat "$work/np3_$name.log"; exit 1
  fi
  three+=("$(checksum_of "$work/np3_$name.json")") || exit 1
done
if [ "${three[0]}" != "${three[1]}" ]; then
  echo "FAIL 3 ranks: fewest threads ${three[0]}, most threads ${three[1]}"; fails=1
else
  echo "ok   3 ranks, fewest and most threads: checksum ${three[0]}"
fi
# Bad values are refused by the config loader, naming the field.
if mpirun --oversubscribe --bind-to none -np 1 "$LEMRT_BIN/lemrt_train" \
     --config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" \
     --override='sparse_core { maximum_parallel_iterations: -1 }' > "$work/bad.log" 2>&1; then
  echo "FAIL maximum_parallel_iterations: -1 was accepted"; fails=1
elif ! grep -q "sparse_core.maximum_parallel_iterations: must be in \[0, 64\] steps, got -1" "$work/bad.log"; then
  echo "FAIL unclear error for maximum_parallel_iterations: -1"; cat "$work/bad.log"; fails=1
fi
exit $fails
