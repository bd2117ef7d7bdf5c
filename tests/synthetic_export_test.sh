#!/usr/bin/env bash
# The synthetic source exported by lemrt_convert (docs/data.md "The synthetic
# source as files"): the training split holds training.steps x global_batch
# rows and the eval split training.eval_samples; training from the two files
# with the printed data section trains the model the synthetic source trains,
# bit for bit, at 1, 2 and 3 ranks (16 steps of 384, 4 SparseCores per chip,
# an evaluation at step 8: model_checksum, params_l2, eval AUC). An eval
# split of 0 rows is refused with a sentence and leaves no file.
# Needs LEMRT_BIN and LEMRT_SRC.
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/examples/configs/dlrm_synthetic.pbtxt"
# 384 divides by the 4, 8 and 12 SparseCores of 1, 2 and 3 chips.
run='training { global_batch: 384 steps: 16 eval_every: 8 eval_samples: 700 log_every: 0 }'
for split in train eval; do
  "$LEMRT_BIN/lemrt_convert" --config="$config" --override="$run" --split=$split \
    --out="$work/$split.bin" > "$work/$split.txt" || { cat "$work/$split.txt"; exit 1; }
done
grep -q "wrote $work/train.bin: 6144 records" "$work/train.txt" \
  || { cat "$work/train.txt"; echo "FAILED: train split is not 16 x 384 rows"; exit 1; }
grep -q "wrote $work/eval.bin: 700 records" "$work/eval.txt" \
  || { cat "$work/eval.txt"; echo "FAILED: eval split is not 700 rows"; exit 1; }
# The printed section of the training split, with the eval file added.
data="$(sed -n 's/^override: //p' "$work/train.txt")"
data="${data/train_path: \"$work\/train.bin\"/train_path: \"$work/train.bin\" eval_path: \"$work/eval.bin\"}"
[[ "$data" == *"eval_path"* ]] || { echo "FAILED: no data section printed: $data"; exit 1; }

train() {  # train NP NAME OVERRIDE
  timeout 300 mpirun --oversubscribe --bind-to none -np "$1" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$run $3" --summary_json="$work/$2.json" > "$work/$2.log" 2>&1 \
    || { cat "$work/$2.log"; echo "FAILED: lemrt_train $2"; exit 1; }
}
for np in 1 2 3; do
  train $np syn$np ""
  train $np bin$np "$data"
done
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
fails = 0
for np in (1, 2, 3):
    syn, bin_ = (json.load(open(f"{w}/{n}{np}.json")) for n in ("syn", "bin"))
    for key in ("model_checksum", "params_l2"):
        ok = syn[key] == bin_[key]
        print(("ok   " if ok else "FAIL ") + f"{np} ranks: {key} synthetic {syn[key]} file {bin_[key]}")
        fails += not ok
    a, b = syn["eval"]["auc"], bin_["eval"]["auc"]
    ok = a == b and 0.5 < a < 1
    print(("ok   " if ok else "FAIL ") + f"{np} ranks: eval AUC synthetic {a} file {b}")
    fails += not ok
sys.exit(1 if fails else 0)
PY

expect_error() {  # expect_error NAME OVERRIDE SENTENCE
  if "$LEMRT_BIN/lemrt_convert" --config="$config" --override="$2" --split=eval \
      --out="$work/$1.bin" > "$work/$1.out" 2>&1; then
    echo "FAILED: $1 converted"; exit 1
  fi
  grep -qF "$3" "$work/$1.out" || { cat "$work/$1.out"; echo "FAILED: $1: no '$3'"; exit 1; }
  [ ! -e "$work/$1.bin" ] && [ ! -e "$work/$1.bin.tmp" ] || { echo "FAILED: $1 left a file"; exit 1; }
}
expect_error no_eval 'training { eval_samples: 0 }' "training.eval_samples rows, and that is 0"
echo "PASSED"
