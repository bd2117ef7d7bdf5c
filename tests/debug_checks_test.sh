#!/usr/bin/env bash
# Debug checks end to end: with sparse_core.debug_check_nan on, an
# embedding learning rate that overflows the rows stops training on every rank
# with the NaN check's sentence (stage, table, step), also when the failing
# update runs pipelined; with all checks on, a normal run passes them.
# Determinism at 3 ranks (docs/architecture.md "Determinism"), 20 steps with
# an evaluation at step 10, id dropping (tight limits, no minibatching: the
# summary must count dropped ids), host worker and tile threads and
# pipelining: the same run twice gives one model_checksum, and a third run
# with every debug check on, a trace (--trace_json), a metrics CSV
# (--metrics_csv) and log_every 5 gives it too (instrumentation is
# bit-neutral). Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
small="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
checks='sparse_core { debug_check_nan: true debug_check_bounds: true debug_guard_words: true }'
failed=0
# 3 steps, and 10 pipelined steps (the failing update is then in flight
# while the next steps run: its error must still surface, not a NaN loss).
# Pipelining set: left unset, lemrt_train turns it off where a rank owns one
# core (2 ranks on a 2-core machine).
piped='sparse_core { debug_check_nan: true debug_check_bounds: true debug_guard_words: true
  disable_full_embedding_pipelining: false }'
for steps in 3 10; do
  timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" --config="$small" \
    --override="$piped training { embedding_learning_rate: 1e38 steps: $steps }" > "$out" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] \
     || [ "$(grep -c "lemrt_train: error: .*NaN check: step [0-9]*, stage sc_backward: .* of table '" "$out")" -ne 2 ]; then
    echo "FAIL nan check, $steps steps (rc=$rc)"; cat "$out"; failed=1
  else
    echo "ok   nan check, $steps steps: $(grep -m1 'lemrt_train: error:' "$out")"
  fi
done
timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" --config="$small" \
  --override="$checks training { steps: 3 eval_samples: 384 }" > "$out" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL clean run with every check on (rc=$rc)"; cat "$out"; failed=1
else
  echo "ok   clean run with every check on"
fi
# Determinism at 3 ranks with ids dropped: a repeat, and every debug check,
# a trace and a metrics CSV on (bit-neutral).
source "$LEMRT_SRC/tests/summary_lib.sh"
work="$(mktemp -d)"
trap 'rm -f "$out"; rm -rf "$work"' EXIT
drop='sparse_core { disable_minibatching: true max_ids_per_partition: 6 max_unique_ids_per_partition: 5
  allow_id_dropping: true disable_full_embedding_pipelining: false host_worker_threads: 2
  maximum_parallel_iterations: 2 tile_threads: 2 } training { steps: 20 eval_every: 10 eval_samples: 384 }'
instrumented=(--override="$drop $checks training { log_every: 5 }" --trace_json="$work/trace.json"
              --trace_steps=3:12 --metrics_csv="$work/metrics.csv")
sums=()
for name in plain repeat instrumented; do
  args=(--override="$drop")
  [ "$name" = instrumented ] && args=("${instrumented[@]}")
  timeout 120 mpirun --oversubscribe --bind-to none -np 3 "$LEMRT_BIN/lemrt_train" --config="$small" \
    "${args[@]}" --summary_json="$work/$name.json" > "$work/$name.log" 2>&1 \
    || { cat "$work/$name.log"; echo "FAIL 3 ranks, ids dropped: run $name"; exit 1; }
  sums+=("$(checksum_of "$work/$name.json")") || exit 1
done
dropped="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['preprocess']['ids_dropped'])" "$work/plain.json")"
if ! [[ "$dropped" =~ ^[0-9]+$ && "$dropped" -gt 0 ]]; then
  echo "FAIL 3 ranks: the tight limits dropped no id ($dropped)"; failed=1
fi
[ -s "$work/trace.json" ] && [ -s "$work/metrics.csv" ] \
  || { echo "FAIL 3 ranks: no trace or metrics CSV written"; failed=1; }
if [ "${sums[1]}" != "${sums[0]}" ]; then
  echo "FAIL 3 ranks, $dropped ids dropped: the same run twice gave ${sums[0]} and ${sums[1]}"; failed=1
else
  echo "ok   3 ranks, $dropped ids dropped: the same run twice gave ${sums[0]}"
fi
if [ "${sums[2]}" != "${sums[0]}" ]; then
  echo "FAIL 3 ranks: debug checks, trace and metrics CSV changed the model: ${sums[2]}, not ${sums[0]}"; failed=1
else
  echo "ok   3 ranks: debug checks, trace and metrics CSV on give the same checksum"
fi
exit "$failed"
