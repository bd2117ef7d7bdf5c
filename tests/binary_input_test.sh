#!/usr/bin/env bash
# Binary input end to end: a random Criteo TSV converted by lemrt_convert
# (--tsv) trains the Criteo Kaggle example config (tables capped by
# data.max_table_rows) to the same model_checksum as the TSV itself at 1, 2
# and 4 ranks, file order and shuffled; a TSV with malformed lines is
# skipped line by line in both (the binary file leaves them out, the TSV
# reader masks them); the CRITEO preset composed with lines that change
# nothing trains the same model from TSV and binary files. Prints the stage breakdown (host vs device stages).
# Needs LEMRT_BIN and LEMRT_SRC.
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/examples/configs/criteo_kaggle.pbtxt"

python3 - "$work" <<'PY'
import random, sys
w = sys.argv[1]
rng = random.Random(3)
def line(bad=False):
    f = [str(rng.randint(0, 1))]
    f += ["" if rng.random() < 0.1 else str(rng.randint(-2, 5000)) for _ in range(13)]
    f += ["" if rng.random() < 0.05 else "%08x" % rng.getrandbits(rng.choice([8, 16, 32]))
          for _ in range(26)]
    if bad: f[5] = "oops"
    return "\t".join(f)
with open(f"{w}/train.tsv", "w") as out:
    for i in range(3000): out.write(line() + "\n")
with open(f"{w}/eval.tsv", "w") as out:
    for i in range(600): out.write(line() + "\n")
with open(f"{w}/bad.tsv", "w") as out:
    for i in range(1000): out.write(line(bad=(i % 250 == 7)) + "\n")
PY
for f in train eval bad; do
  "$LEMRT_BIN/lemrt_convert" --tsv="$work/$f.tsv" --out="$work/$f.bin" > /dev/null 2>&1
done

common='data { max_table_rows: 4000 } training { global_batch: 256 steps: 14 eval_every: 0 log_every: 0 }'
train() {  # train NP NAME OVERRIDE
  timeout 300 mpirun --oversubscribe --bind-to none -np "$1" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$common $3" --summary_json="$work/$2.json" > "$work/$2.log" 2>&1 \
    || { cat "$work/$2.log"; echo "FAILED: lemrt_train $2"; exit 1; }
}
tsv="data { criteo { train_path: \"$work/train.tsv\" eval_path: \"$work/eval.tsv\" } }"
bin="data { binary { train_path: \"$work/train.bin\" eval_path: \"$work/eval.bin\" } }"
for np in 1 2 4; do
  train $np tsv$np "$tsv"
  train $np bin$np "$bin"
done
# The CRITEO preset composed with lines that change nothing trains the same model.
noop='dense { name: "I4" } sparse { feature: "c3" }'
train 2 composed "$tsv data { schema { $noop } }"
train 2 composed_bin "$bin data { schema { preset: CRITEO $noop } }"
train 2 tsv_shuffled "$tsv data { shuffle_window: 500 }"
train 2 bin_shuffled "$bin data { shuffle_window: 500 }"
train 1 bad_tsv "data { criteo { train_path: \"$work/bad.tsv\" eval_path: \"$work/eval.tsv\" } } training { steps: 3 }"
train 1 bad_bin "data { binary { train_path: \"$work/bad.bin\" eval_path: \"$work/eval.bin\" } } training { steps: 3 }"

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
names = [f"{f}{np}" for np in (1, 2, 4) for f in ("tsv", "bin")] + [
    "tsv_shuffled", "bin_shuffled", "bad_tsv", "bad_bin", "composed", "composed_bin"]
s = {n: json.load(open(f"{w}/{n}.json")) for n in names}
for n, j in s.items():
    b = j["breakdown_ms"]
    print(f"{n}: world {j['world_size']} checksum {j['model_checksum']} auc {j['eval']['auc']:.4f} "
          f"ms/step host {b['host']:.2f} sc_fwd {b['sc_forward']:.2f} tc {b['tc']:.2f} "
          f"sc_bwd {b['sc_backward']:.2f}")
fails = []
for np in ("1", "2", "4", "_shuffled"):
    if s["tsv" + np]["model_checksum"] != s["bin" + np]["model_checksum"]:
        fails.append(f"{np}: binary and TSV input train different models")
    if not s["tsv" + np]["eval"]["samples"] == s["bin" + np]["eval"]["samples"] == 600:
        fails.append(f"{np}: eval samples are not the file's 600 rows")
# 3000 rows at 256 a step: 12 steps an epoch, the last of 184 rows.
if s["tsv1"]["train"]["steps_per_epoch"] != 12 or s["tsv1"]["train"]["samples"] != 3000 + 2 * 256:
    fails.append(f"epochs: {s['tsv1']['train']}")
if s["bad_tsv"]["train"]["skipped_rows"] != 4:
    fails.append(f"bad TSV: {s['bad_tsv']['train']['skipped_rows']} rows skipped, 4 expected")
for n in ("composed", "composed_bin"):
    if s[n]["model_checksum"] != s["tsv2"]["model_checksum"]:
        fails.append(f"{n}: the composed CRITEO preset trains another model than the plain one")
if s["tsv_shuffled"]["model_checksum"] == s["tsv2"]["model_checksum"]:
    fails.append("shuffling changed nothing")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("1 passed, 0 failed")
PY
