#!/usr/bin/env bash
# Validated binary input (docs/data.md "Binary files"): a lemrt_convert file
# with a flipped bit, a version-1 file, and files whose label, dense value or
# value count was edited with every checksum recomputed (so the range checks
# must catch them) each end the job non-zero within 30 s with the same
# sentence on every rank, naming the file, the record and the column;
# lemrt_convert refuses to write over its input. Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"
tamper="python3 $LEMRT_SRC/tests/binary_tamper.py"

python3 - "$work/train.tsv" <<'PY'
import random, sys
rng = random.Random(5)
with open(sys.argv[1], "w") as out:
    for i in range(3000):
        f = [str(rng.randint(0, 1))] + [str(rng.randint(0, 500)) for _ in range(13)]
        f += ["%x" % rng.getrandbits(20) for _ in range(26)]
        out.write("\t".join(f) + "\n")
PY
"$LEMRT_BIN/lemrt_convert" --tsv="$work/train.tsv" --out="$work/good.bin" > /dev/null || exit 1
# Criteo binary with small_dlrm's three features (columns 0..2).
binary() { echo "data { binary { train_path: \"$1\" } } training { eval_samples: 0 steps: 12 global_batch: 256 }"; }
variant() {  # variant NAME tamper-args...: a copy of good.bin, edited
  cp "$work/good.bin" "$work/$1.bin"; shift_name="$1"; shift
  $tamper "$work/$shift_name.bin" "$@"
}

variant flipped --record 1500 --flip 9 --keep_checksums
expect_same_error bit_flip 2 "flipped.bin': block 1 (records 1025-2048) fails its CRC-32C checksum" \
  --config="$config" --override="$(binary "$work/flipped.bin")"

printf 'LEMRTBN1\001\000\000\000\244\000\000\000' > "$work/old.bin"
head -c 200 /dev/zero >> "$work/old.bin"
expect_same_error version_1 2 "old.bin' is not a lemrt binary file: it is a version 1 .*lemrt_convert" \
  --config="$config" --override="$(binary "$work/old.bin")"

variant label --record 2100 --label 7
expect_same_error label_range 2 "label.bin, record 2101: label 'label' is 7; labels must be numbers in \[0, 1\]" \
  --config="$config" --override="$(binary "$work/label.bin")"

variant nan --record 700 --dense 2 nan
expect_same_error dense_nan 2 "nan.bin, record 701: dense input 'I3' is nan" \
  --config="$config" --override="$(binary "$work/nan.bin")"

variant inf --record 5 --dense 0 inf
expect_same_error dense_inf 1 "inf.bin, record 6: dense input 'I1' is inf" \
  --config="$config" --override="$(binary "$work/inf.bin")"

variant count --record 42 --count 4000000000
expect_same_error value_count 2 "count.bin, record 43: sparse input 'C1' claims 4000000000 values" \
  --config="$config" --override="$(binary "$work/count.bin")"

# lemrt_convert never writes over its input.
cp "$work/train.tsv" "$work/keep.tsv"
if "$LEMRT_BIN/lemrt_convert" --tsv="$work/train.tsv" --out="$work/train.tsv" > "$work/out" 2>&1; then
  failed=$((failed + 1)); echo "FAIL convert_onto_input: accepted"
elif ! grep -q "is the input" "$work/out" || ! cmp -s "$work/train.tsv" "$work/keep.tsv"; then
  failed=$((failed + 1)); echo "FAIL convert_onto_input"; cat "$work/out"
else
  passed=$((passed + 1)); echo "ok   convert_onto_input: $(grep -o 'error: .*' "$work/out")"
fi
finish
