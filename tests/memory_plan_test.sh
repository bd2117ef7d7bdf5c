#!/usr/bin/env bash
# The static memory plan end to end: --dry_run prints the plan of the
# example config and exits 0; plans that do not fit make --dry_run exit 1 and
# make training refuse to start on every rank with the plan's message; a real
# run reports the plan in the summary's `memory` object. Needs LEMRT_BIN and
# LEMRT_SRC.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
example="$LEMRT_SRC/examples/configs/dlrm_synthetic.pbtxt"
small="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
train() {  # train NP args...: runs lemrt_train, output in $work/out, returns its status
  local np="$1"; shift
  timeout 120 mpirun --oversubscribe --bind-to none -np "$np" "$LEMRT_BIN/lemrt_train" "$@" \
    > "$work/out" 2>&1
}
failed=0
fail() { echo "FAIL $1"; cat "$work/out"; failed=$((failed + 1)); }

for np in 1 2; do
  if train "$np" --config="$example" --dry_run \
     && grep -q "The plan fits." "$work/out" && grep -q "^user " "$work/out" \
     && grep -q "SPMEM per tile" "$work/out" && grep -q "Padding:" "$work/out" \
     && ! grep -q "samples/s" "$work/out"; then
    echo "ok   dry run of the example on $np chip(s): $(grep -m1 '^HBM per chip' "$work/out")"
  else
    fail "dry run of the example on $np chip(s)"
  fi
done

expect_refusal() {  # expect_refusal NAME WANT OVERRIDE
  local name="$1" want="$2" override="$3"
  train 1 --config="$small" --override="$override" --dry_run
  local rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q "The plan does NOT fit." "$work/out" \
     || ! grep -q -- "$want" "$work/out"; then
    fail "$name (dry run, rc=$rc)"; return
  fi
  train 2 --config="$small" --override="$override"
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$(grep -c "lemrt_train: error: .*$want" "$work/out")" -ne 2 ]; then
    fail "$name (training, rc=$rc)"; return
  fi
  echo "ok   $name: $(grep -m1 'lemrt_train: error:' "$work/out" | cut -c1-160)..."
}
expect_refusal spmem_fixed "Fixed size allocations (" \
  'topology { spmem_bytes_per_tile: 4096 } features { name: "long" table: "b" max_sequence_length: 300 }'
# Every stack's fixed allocations fit (largest: 2528 B), but not every gather
# operand at 1 and 2 chips (sample_count is per SparseCore, so it halves).
expect_refusal gather "Gather operand too large for table '" \
  'topology { spmem_bytes_per_tile: 2600 }'
expect_refusal hbm "HBM out of memory on each chip" 'topology { hbm_bytes: 1000000 }'

if train 2 --config="$small" --override='training { steps: 2 eval_samples: 384 } tables { name: "p" vocab_size: 1000 dim: 4 combiner: SUM }' \
     --summary_json="$work/s.json" \
   && python3 - "$work/s.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
for k in ("hbm_bytes_per_chip", "hbm_stack_bytes", "hbm_heap_bytes", "spmem_bytes_per_tile",
          "padding_bytes"):
    assert m[k] > 0, (k, m)
assert m["hbm_bytes_per_chip"] == m["hbm_table_bytes"] + m["hbm_stack_bytes"] + m["hbm_heap_bytes"], m
PY
then
  echo "ok   summary memory object"
else
  fail "summary memory object"
fi

[ "$failed" -eq 0 ] && echo "all memory plan checks passed"
exit "$failed"
