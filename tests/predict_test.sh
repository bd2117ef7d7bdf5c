#!/usr/bin/env bash
# lemrt_predict (docs/data.md "Predictions"): a checkpoint of the multi-hot
# example trained on 2 ranks scores its eval TSV with the AUC and log loss the
# trainer's own final evaluation reported (same digits at 2 ranks, within
# 1e-5 at 1 and 4), one prediction per row in input order (CSV and .npy), and
# the same probabilities for the rows without their label column. NE,
# calibration and GAUC (grouped by user) printed equal the summary's and a
# plain computation from the predictions.
# Needs LEMRT_BIN and LEMRT_SRC.
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/examples/configs/multihot_tfrecord.pbtxt"
python3 "$LEMRT_SRC/scripts/gen_multihot_data.py" --out "$work" --train_rows 500 --eval_rows 300 \
  --seed 5 > /dev/null
# The eval rows without their label column.
cut -f2- "$work/eval.tsv" > "$work/unlabelled.tsv"
text="data { text { train_path: \"$work/train.tsv\" eval_path: \"$work/eval.tsv\" header: true } }"
override="training { global_batch: 64 epochs: 1 log_every: 0 eval_group_feature: \"user\" } $text"
mpi() { timeout 300 mpirun --oversubscribe --bind-to none "$@"; }
mpi -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" --override="$override" \
  --checkpoint_dir="$work/ck" --summary_json="$work/train.json" > "$work/train.log" 2>&1 \
  || { cat "$work/train.log"; echo "FAILED: lemrt_train"; exit 1; }
predict() {  # predict NP DATA OUT
  mpi -np "$1" "$LEMRT_BIN/lemrt_predict" --config="$config" --override="$override" \
    --checkpoint="$work/ck" --data="$2" --out="$3" > "$3.log" 2>&1 \
    || { cat "$3.log"; echo "FAILED: lemrt_predict -np $1"; exit 1; }
}
predict 2 "$work/eval.tsv" "$work/p2.csv"
predict 1 "$work/eval.tsv" "$work/p1.npy"
predict 4 "$work/eval.tsv" "$work/p4.csv"
predict 2 "$work/unlabelled.tsv" "$work/u2.csv"

python3 - "$work" <<'PY'
import json, math, re, struct, sys
w = sys.argv[1]
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fails.append(what)
s = json.load(open(f"{w}/train.json"))["eval"]
def printed(name):
    m = re.search(r"auc ([0-9.]+)  logloss ([0-9.]+)", open(f"{w}/{name}.log").read())
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)
def csv(name):
    lines = open(f"{w}/{name}").read().splitlines()
    assert lines[0] == "row,probability,label"
    return [l.split(",") for l in lines[1:]]
auc2, ll2 = printed("p2.csv")
check(auc2 == round(s["auc"], 6) and ll2 == round(s["logloss"], 6),
      f"2 ranks: predict auc {auc2} logloss {ll2} = the trainer's {s['auc']:.6f} {s['logloss']:.6f}")
for name in ("p1.npy", "p4.csv"):
    auc, ll = printed(name)
    check(auc is not None and abs(auc - s["auc"]) < 1e-5 and abs(ll - s["logloss"]) < 1e-5,
          f"{name}: auc {auc} logloss {ll} within 1e-5 of the trainer's")
p2 = csv("p2.csv")
check(len(p2) == 300 == s["samples"], f"one prediction per eval row ({len(p2)})")
check([int(r[0]) for r in p2] == list(range(300)), "predictions in input order")
labels = [float(l.split("\t")[0]) for l in open(f"{w}/eval.tsv").read().splitlines()[1:]]
check([float(r[2]) for r in p2] == labels, "labels carried through")
probs = [float(r[1]) for r in p2]
ll = -sum(y * math.log(min(max(p, 1e-7), 1 - 1e-7)) + (1 - y) * math.log(1 - min(max(p, 1e-7), 1 - 1e-7))
          for p, y in zip(probs, labels)) / len(labels)
check(abs(ll - s["logloss"]) < 1e-5, f"the CSV's probabilities give the log loss ({ll:.6f})")
b = open(f"{w}/p1.npy", "rb").read()
hl = struct.unpack_from("<H", b, 8)[0]
npy = struct.unpack("<%df" % ((len(b) - 10 - hl) // 4), b[10 + hl:])
check(len(npy) == 600 and max(abs(npy[2 * i] - probs[i]) for i in range(300)) < 1e-5,
      "the .npy holds [rows x (probability, label)] matching the CSV")
u2 = csv("u2.csv")
check(len(u2) == 300 and all(r[2] == "" for r in u2) and [r[1] for r in u2] == [r[1] for r in p2],
      "rows without labels: the same probabilities, empty labels")
check("no labels" in open(f"{w}/u2.csv.log").read(), "no metrics without labels")
# NE, calibration, GAUC: printed = the trainer's summary = plain Python.
log2 = open(f"{w}/p2.csv.log").read()
m = re.search(r"ne ([0-9.]+)  calibration ([0-9.]+)  gauc ([0-9.]+) \((\d+) groups\)", log2)
check(m is not None, "predict prints ne, calibration and gauc")
mean = sum(labels) / len(labels)
ne = ll / -(mean * math.log(mean) + (1 - mean) * math.log(1 - mean))
calibration = sum(probs) / sum(labels)
header = open(f"{w}/eval.tsv").readline().rstrip("\n").split("\t")
users = [l.split("\t")[header.index("user_id")] for l in open(f"{w}/eval.tsv").read().splitlines()[1:]]
groups = {}
for u, p, y in zip(users, probs, labels):
    groups.setdefault(u, []).append((p, y))
num = den = used = 0
for rows in groups.values():
    pos = [p for p, y in rows if y > 0.5]
    neg = [p for p, y in rows if y <= 0.5]
    if not pos or not neg: continue
    auc = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg) / (len(pos) * len(neg))
    num += len(rows) * auc; den += len(rows); used += 1
for key, plain in (("ne", ne), ("calibration", calibration), ("gauc", num / den)):
    check(abs(s[key] - plain) < 1e-5, f"summary {key} {s[key]:.6f} = plain {plain:.6f}")
if m:
    check([float(m.group(i)) for i in (1, 2, 3)] == [round(s[k], 6) for k in ("ne", "calibration", "gauc")]
          and int(m.group(4)) == s["gauc_groups"] == used,
          f"2 ranks: predict ne/calibration/gauc {m.groups()} = the trainer's ({used} groups)")
if fails:
    print("FAILED:", len(fails)); sys.exit(1)
print("predict: all passed")
PY
