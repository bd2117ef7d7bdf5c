#!/usr/bin/env bash
# Debug checks end to end: with sparse_core.debug_check_nan on, an
# embedding learning rate that overflows the rows stops training on every rank
# with the NaN check's sentence (stage, table, step), also when the failing
# update runs pipelined; with all checks on, a normal run passes them. Needs
# LEMRT_BIN and LEMRT_SRC.
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
exit "$failed"
