#!/usr/bin/env bash
# Binary input end to end: a random Criteo TSV converted by
# lemrt_convert trains the Criteo Kaggle example config (tables capped by
# data.max_table_rows) to the same model_checksum as the TSV itself on 1 rank
# (file order), and runs sharded and shuffled on 2 ranks. Prints the stage
# breakdown (host vs device stages). Needs LEMRT_BIN and LEMRT_SRC.
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
    for i in range(3000): out.write(line(bad=(i % 500 == 7)) + "\n")
with open(f"{w}/eval.tsv", "w") as out:
    for i in range(600): out.write(line() + "\n")
PY
"$LEMRT_BIN/lemrt_convert" --tsv="$work/train.tsv" --out="$work/train.bin"
"$LEMRT_BIN/lemrt_convert" --tsv="$work/eval.tsv" --out="$work/eval.bin"

common='data { max_table_rows: 4000 } training { global_batch: 256 steps: 20 eval_every: 0 eval_samples: 512 log_every: 0 }'
train() {  # train NP NAME OVERRIDE
  timeout 300 mpirun --oversubscribe --bind-to none -np "$1" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$common $3" --summary_json="$work/$2.json" > "$work/$2.log" 2>&1 \
    || { cat "$work/$2.log"; echo "FAILED: lemrt_train $2"; exit 1; }
}
train 1 tsv "data { criteo { train_path: \"$work/train.tsv\" eval_path: \"$work/eval.tsv\" } }"
train 1 bin "data { binary { train_path: \"$work/train.bin\" eval_path: \"$work/eval.bin\" } }"
train 2 bin2 "data { binary { train_path: \"$work/train.bin\" eval_path: \"$work/eval.bin\" shuffle_window: 64 } }"

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
s = {n: json.load(open(f"{w}/{n}.json")) for n in ["tsv", "bin", "bin2"]}
for n, j in s.items():
    b = j["breakdown_ms"]
    print(f"{n}: world {j['world_size']} checksum {j['model_checksum']} auc {j['eval']['auc']:.4f} "
          f"ms/step host {b['host']:.2f} sc_fwd {b['sc_forward']:.2f} tc {b['tc']:.2f} "
          f"sc_bwd {b['sc_backward']:.2f}")
fails = []
if s["tsv"]["model_checksum"] != s["bin"]["model_checksum"]:
    fails.append("binary and TSV input train different models")
if s["tsv"]["eval"]["samples"] != s["bin"]["eval"]["samples"] or s["bin"]["eval"]["samples"] == 0:
    fails.append("eval samples differ")
if not s["bin2"]["train"]["loss_last"] > 0: fails.append("2-rank binary run has no loss")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("1 passed, 0 failed")
PY
