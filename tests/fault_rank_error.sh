#!/usr/bin/env bash
# An error on one rank only: its slice of a step holds a malformed
# line in strict mode (met mid-training), its input is unreadable, or it
# produces a NaN with sparse_core.debug_check_nan on.
# Every rank must stop within 30 s, non-zero, printing the same sentence that
# names the failing rank and the cause. Needs LEMRT_BIN
# and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"

# lines N FIRST [BAD]: N valid Criteo lines tagged FIRST..; with BAD, line
# number BAD (1-based, within these N) gets the non-hex category "zz12".
lines() {
  python3 - "$@" <<'PY'
import sys
n, first = int(sys.argv[1]), int(sys.argv[2])
bad = int(sys.argv[3]) if len(sys.argv) > 3 else 0
for i in range(first, first + n):
    ints = [str((i * 7 + k) % 50) for k in range(13)]
    cats = ["%x" % ((i * 2654435761 + c * 40503) % (1 << 32)) for c in range(26)]
    if i - first + 1 == bad:
        cats[3] = "zz12"
    print("\t".join([str(i % 2)] + ints + cats))
PY
}
criteo() {  # criteo TRAIN STRICT STEPS
  echo "data { criteo { train_path: \"$1\" strict: $2 } } training { eval_samples: 0 steps: $3 }"
}

# Garbage from line 301 on: with strict on, rank 1 meets it first, in its
# slice of step 1 (rows 288..383; ranks take contiguous slices of each
# global batch of 192 rows).
{ lines 300 0; for i in $(seq 300); do printf 'garbage %0300d\n' "$i"; done; } > "$work/half.tsv"
expect_same_error garbage_rows_rank1 2 "rank 1: step 1: .*half.tsv:301: " --config="$config" \
  --override="$(criteo "$work/half.tsv" true 4)"

# A malformed line deep in rank 1's shard (its line 250 of 300): with
# strict on it is met at step 250 * 2 / 192 ~ 2, after training started.
{ lines 300 0; lines 300 300 250; } > "$work/strict.tsv"
expect_same_error strict_line_rank1 2 "rank 1: .*strict.tsv:550: .*zz12" --config="$config" \
  --override="$(criteo "$work/strict.tsv" true 20)"
# The same on 3 ranks: rank 2 fails alone (its share is the last third).
{ lines 200 0; lines 200 200; lines 200 400 150; } > "$work/strict3.tsv"
expect_same_error strict_line_rank2_of_3 3 "rank 2: .*strict3.tsv:550: .*zz12" --config="$config" \
  --override="$(criteo "$work/strict3.tsv" true 20)"

# Rank 1's input unreadable: an MPMD job runs rank 1 in another working
# directory, where the config's relative train_path does not exist (chmod
# cannot do it: tests run as root). The configs are equal, as the ranks check.
mkdir -p "$work/r0" "$work/r1"
lines 400 0 > "$work/r0/train.tsv"
start=$SECONDS
timeout "$deadline" "${MPIRUN[@]}" -np 1 -wdir "$work/r0" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$(criteo train.tsv false 4)" : \
  -np 1 -wdir "$work/r1" "$LEMRT_BIN/lemrt_train" --config="$config" \
    --override="$(criteo train.tsv false 4)" > "$work/out" 2>&1
check_same_error unreadable_rank1 2 "rank 1: cannot open input file 'train.tsv': No such file" $? \
  $((SECONDS - start))

# A NaN on rank 1 only, with sparse_core.debug_check_nan on: an MPMD job
# gives rank 1's copy of table "a" rows drawn from [-3.4e38, 3.4e38), so the
# partial sums its SparseCores pool at step 0 overflow (a sample's repeated
# id, or two large rows) while rank 0's stay finite.
sed 's/^tables { name: "a" vocab_size: 20000 dim: 16 combiner: SUM/& initializer { uniform { scale: 3.4e38 } }/' \
  "$config" > "$work/huge_init.pbtxt"
grep -q 'scale: 3.4e38' "$work/huge_init.pbtxt" || { echo "FAIL nan_rank1: $config changed"; failed=$((failed + 1)); }
nan_args=(--override='sparse_core { debug_check_nan: true } training { steps: 5 eval_samples: 0 }')
start=$SECONDS
# The ranks' configs differ on purpose: the test hook skips their agreement.
LEMRT_TEST_ALLOW_DIFFERENT_CONFIGS=1 \
timeout "$deadline" "${MPIRUN[@]}" -np 1 "$LEMRT_BIN/lemrt_train" --config="$config" "${nan_args[@]}" : \
  -np 1 "$LEMRT_BIN/lemrt_train" --config="$work/huge_init.pbtxt" "${nan_args[@]}" > "$work/out" 2>&1
check_same_error nan_rank1 2 "rank 1: NaN check: step 0, stage sc_forward: .* of table 'a'" $? \
  $((SECONDS - start))
finish
