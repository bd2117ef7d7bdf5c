#!/usr/bin/env bash
# Bad input through mpirun: configs with zero, negative, NaN or
# overflowing sizes and Criteo TSV files that are empty, header-only or hold
# malformed lines. Each must end the job non-zero within 30 s with the same
# one-sentence error on every rank. Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"

# --- Config: zero / negative / huge sizes, NaN learning rates.
expect_same_error vocab_zero 2 "vocab_size" --config="$config" \
  --override='tables { name: "d" vocab_size: 0 dim: 4 combiner: SUM }'
expect_same_error batch_zero 2 "global_batch" --config="$config" \
  --override='training { global_batch: 0 }'
expect_same_error batch_negative 2 "global_batch" --config="$config" \
  --override='training { global_batch: -192 }'
expect_same_error steps_negative 2 "steps" --config="$config" \
  --override='training { steps: -5 }'
expect_same_error seq_len_zero 2 "max_sequence_length" --config="$config" \
  --override='features { name: "z" table: "a" max_sequence_length: 0 }'
expect_same_error mlp_zero 2 "bottom_mlp" --config="$config" \
  --override='model { bottom_mlp: [ 0 ] }'
expect_same_error dense_negative 2 "num_dense_features" --config="$config" \
  --override='model { num_dense_features: -1 }'
# 2^26 samples x 64 ids per sample = 2^32 ids: overflows 32-bit counters.
expect_same_error ids_overflow 2 "2147483647\|32-bit\|overflow" --config="$config" \
  --override='training { global_batch: 67108864 } features { name: "big" table: "a" max_sequence_length: 64 }'
expect_same_error vocab_huge 2 "vocab_size" --config="$config" \
  --override='tables { name: "h" vocab_size: 9223372036854775807 dim: 4 combiner: SUM }'
expect_same_error lr_nan 2 "dense_learning_rate" --config="$config" \
  --override='training { dense_learning_rate: nan }'
expect_same_error emb_lr_nan 2 "embedding_learning_rate" --config="$config" \
  --override='training { embedding_learning_rate: nan }'
expect_same_error lr_inf 2 "dense_learning_rate" --config="$config" \
  --override='training { dense_learning_rate: inf }'

# --- Criteo TSV files.
# good_lines N FIRST: N valid lines, tagged FIRST.., on stdout.
good_lines() {
  python3 - "$1" "$2" <<'PY'
import sys
n, first = int(sys.argv[1]), int(sys.argv[2])
for i in range(first, first + n):
    ints = [str((i * 7 + k) % 50) for k in range(13)]
    cats = ["%x" % ((i * 2654435761 + c * 40503) % (1 << 32)) for c in range(26)]
    print("\t".join([str(i % 2)] + ints + cats))
PY
}
criteo() {  # criteo TRAIN [strict]: the override reading TRAIN (and eval).
  echo "data { criteo { train_path: \"$1\" strict: ${2:-false} } } training { eval_samples: 0 steps: 4 }"
}
good_lines 400 0 > "$work/good.tsv"
: > "$work/empty.tsv"
printf 'label\tI1\tI2\tC1\n' > "$work/header.tsv"
{ good_lines 5 0; good_lines 1 5 | sed 's/$/\textra/'; good_lines 5 6; } > "$work/many.tsv"
{ good_lines 5 0; good_lines 1 5 | sed 's/\t[0-9a-f]*$/\tzz12/'; good_lines 5 6; } > "$work/nonhex.tsv"
{ good_lines 5 0; good_lines 1 5 | sed 's/^\([01]\)\t[0-9]*/\1\t99999999999999999999/'; good_lines 5 6; } \
  > "$work/overflow.tsv"
expect_same_error tsv_empty 2 "empty.tsv" --config="$config" --override="$(criteo "$work/empty.tsv")"
expect_same_error tsv_header_only 2 "header.tsv" --config="$config" \
  --override="$(criteo "$work/header.tsv")"
expect_same_error tsv_too_many_fields 1 "many.tsv:6: .*more than 40 fields" --config="$config" \
  --override="$(criteo "$work/many.tsv" true)"
expect_same_error tsv_non_hex 1 "nonhex.tsv:6: .*field 40 'zz12' is not a hex category" \
  --config="$config" --override="$(criteo "$work/nonhex.tsv" true)"
expect_same_error tsv_int_overflow 1 "overflow.tsv:6: .*field 2" --config="$config" \
  --override="$(criteo "$work/overflow.tsv" true)"

# Not strict: each malformed line is skipped with a warning naming file:line,
# and the run succeeds.
for f in many nonhex overflow; do
  if timeout 60 "${MPIRUN[@]}" -np 1 "$LEMRT_BIN/lemrt_train" --config="$config" \
       --override="$(criteo "$work/$f.tsv")" > "$work/out" 2>&1 \
     && grep -q "$f.tsv:6: .*skipping the line (1 skipped so far" "$work/out"; then
    passed=$((passed + 1)); echo "ok   tsv_${f}_skipped: $(grep -m1 -o "$f.tsv:6: .*" "$work/out")"
  else
    failed=$((failed + 1)); echo "FAIL tsv_${f}_skipped"; grep -i "error\|skipping" "$work/out" | head
  fi
done
# Too few fields: documented to pad with empty (missing) fields, so a line of
# just a label is a valid sample, also in strict mode.
{ good_lines 5 0; printf '1\n0\t3\n'; good_lines 5 7; } > "$work/few.tsv"
if timeout 60 "${MPIRUN[@]}" -np 1 "$LEMRT_BIN/lemrt_train" --config="$config" \
     --override="$(criteo "$work/few.tsv" true)" > "$work/out" 2>&1; then
  passed=$((passed + 1)); echo "ok   tsv_too_few_fields: padded, run completed"
else
  failed=$((failed + 1)); echo "FAIL tsv_too_few_fields"; tail -n 20 "$work/out"
fi
finish
