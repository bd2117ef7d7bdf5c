#!/usr/bin/env bash
# SparseCore tiles on the trainer's tile pool: the same run with
# sparse_core.tile_threads 1 and 4 ends with the same model checksum (results
# never depend on thread timing); each summary holds a checksum (16 hex
# digits, tests/summary_lib.sh) and records the tile_threads it ran with.
# Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
source "$LEMRT_SRC/tests/summary_lib.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sums=()
for tt in 1 4; do
  if ! timeout 200 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
       --config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" \
       --override="sparse_core { tile_threads: $tt } training { steps: 10 eval_samples: 384 }" \
       --summary_json="$work/s$tt.json" > "$work/out$tt" 2>&1; then
    echo "FAIL run with tile_threads $tt"; cat "$work/out$tt"; exit 1
  fi
  got="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['threads'].get('tile_threads', ''))" "$work/s$tt.json")"
  if [ "$got" != "$tt" ]; then
    echo "FAIL run with tile_threads $tt: the summary's threads.tile_threads is '$got'"; exit 1
  fi
  sum="$(checksum_of "$work/s$tt.json")" || exit 1
  sums+=("$sum")
done
if [ "${sums[0]}" != "${sums[1]}" ]; then
  echo "FAIL checksums differ: ${sums[0]} (1 thread) vs ${sums[1]} (4 threads)"; exit 1
fi
echo "ok   tile_threads 1 and 4 give model checksum ${sums[0]}"
