#!/usr/bin/env bash
# lemrt_predict (docs/data.md "Predictions"): a checkpoint of the multi-hot
# example trained on 2 ranks scores its eval TSV with the AUC and log loss the
# trainer's own final evaluation reported (same digits at 2 ranks, within
# 1e-5 at 1 and 4), one prediction per row in input order (CSV and .npy), and
# the same probabilities for the rows without their label column. NE,
# calibration and GAUC (grouped by user) printed equal the summary's and a
# plain computation from the predictions.
# Multi-task (docs/training.md "Multi-task"): examples/configs/multitask.pbtxt
# (click and a conversion label missing on unclicked rows) trained on 1 rank
# and on 2 ranks (world_size_independent: one model_checksum); its
# checkpoint scored on 1 and 2 ranks (4 SparseCores each) gives the same
# predictions, bit for bit, one probability and label per task; the
# summary's per-task metrics equal the printed ones and a plain computation
# over each task's labelled rows; the metrics CSV has each task's columns;
# lemrt_ckpt export --task writes each head; the TSV converted to binary
# records (every label) trains the same model. With the conversion's loss weight
# 0 the click head's metrics equal those of the single-task model, exactly.
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

# --- Multi-task: two heads, a label missing on most rows. ---
mt="$work/mt"
python3 "$LEMRT_SRC/scripts/gen_multihot_data.py" --out "$mt" --train_rows 640 --eval_rows 300 \
  --seed 7 --conversions > /dev/null
mt_config="$LEMRT_SRC/examples/configs/multitask.pbtxt"
mt_override="training { global_batch: 64 epochs: 1 log_every: 0 eval_group_feature: \"user\"
  world_size_independent: true }
  data { text { train_path: \"$mt/train.tsv\" eval_path: \"$mt/eval.tsv\" } }"
mpi -np 1 "$LEMRT_BIN/lemrt_train" --config="$mt_config" --override="$mt_override" \
  --checkpoint_dir="$mt/ck" --summary_json="$mt/train1.json" --metrics_csv="$mt/metrics.csv" \
  > "$mt/train1.log" 2>&1 || { cat "$mt/train1.log"; echo "FAILED: multi-task lemrt_train -np 1"; exit 1; }
# 2 ranks x 2 SparseCores: the same 4 SparseCores as 1 x 4 (multi-hot lists).
mpi -np 2 "$LEMRT_BIN/lemrt_train" --config="$mt_config" \
  --override="$mt_override topology { sparse_cores_per_chip: 2 }" --summary_json="$mt/train2.json" \
  > "$mt/train2.log" 2>&1 || { cat "$mt/train2.log"; echo "FAILED: multi-task lemrt_train -np 2"; exit 1; }
# The same rows as binary records (every label, a missing conversion as NaN):
# the same model as from the TSV.
for split in train eval; do
  "$LEMRT_BIN/lemrt_convert" --config="$mt_config" --override="$mt_override" --split=$split \
    --out="$mt/$split.bin" > "$mt/convert.log" 2>&1 \
    || { cat "$mt/convert.log"; echo "FAILED: lemrt_convert of the multi-task $split split"; exit 1; }
done
mpi -np 2 "$LEMRT_BIN/lemrt_train" --config="$mt_config" --override="$mt_override
  data { binary { train_path: \"$mt/train.bin\" eval_path: \"$mt/eval.bin\" } }
  topology { sparse_cores_per_chip: 2 }" --summary_json="$mt/binary.json" > "$mt/binary.log" 2>&1 \
  || { cat "$mt/binary.log"; echo "FAILED: multi-task lemrt_train from binary records"; exit 1; }
# The plain reference: the single-task example on the click label, and the
# two-task model with the conversion's loss weight 0, whose click head must
# then train exactly as the single-task model does.
mpi -np 1 "$LEMRT_BIN/lemrt_train" --config="$config" \
  --override="$mt_override data { text { header: true } }" --summary_json="$mt/single.json" \
  > "$mt/single.log" 2>&1 || { cat "$mt/single.log"; echo "FAILED: single-task lemrt_train"; exit 1; }
sed 's/loss_weight: 2/loss_weight: 0/' "$mt_config" > "$mt/weight0.pbtxt"
mpi -np 1 "$LEMRT_BIN/lemrt_train" --config="$mt/weight0.pbtxt" --override="$mt_override" \
  --summary_json="$mt/weight0.json" > "$mt/weight0.log" 2>&1 \
  || { cat "$mt/weight0.log"; echo "FAILED: lemrt_train with loss_weight 0"; exit 1; }
for np in 1 2; do
  mpi -np "$np" "$LEMRT_BIN/lemrt_predict" --config="$mt_config" \
    --override="$mt_override topology { sparse_cores_per_chip: $((4 / np)) }" \
    --checkpoint="$mt/ck" --data="$mt/eval.tsv" --out="$mt/p$np.csv" > "$mt/p$np.log" 2>&1 \
    || { cat "$mt/p$np.log"; echo "FAILED: multi-task lemrt_predict -np $np"; exit 1; }
done
for task in click conversion; do
  "$LEMRT_BIN/lemrt_ckpt" export "$mt/ck" --task=$task --out="$mt/$task.npy" > "$mt/export.log" 2>&1 \
    || { cat "$mt/export.log"; echo "FAILED: lemrt_ckpt export --task=$task"; exit 1; }
done
if "$LEMRT_BIN/lemrt_ckpt" export "$mt/ck" --task=view --out="$mt/view.npy" > "$mt/bad.log" 2>&1 \
    || ! grep -q "no task 'view'; its tasks: click, conversion" "$mt/bad.log"; then
  cat "$mt/bad.log"; echo "FAILED: an unknown task is a sentence naming the tasks"; exit 1
fi

python3 - "$mt" <<'PY'
import json, math, re, struct, sys
w = sys.argv[1]
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fails.append(what)
s1, s2 = (json.load(open(f"{w}/train{n}.json")) for n in (1, 2))
check(s1["model_checksum"] == s2["model_checksum"],
      f"1 and 2 ranks train one model ({s1['model_checksum']}, {s2['model_checksum']})")
sb = json.load(open(f"{w}/binary.json"))
check(sb["model_checksum"] == s1["model_checksum"] and sb["eval"]["tasks"] == s2["eval"]["tasks"],
      f"binary records train the TSV's model: checksum {sb['model_checksum']}, the same per-task metrics")
tasks = s1["eval"].get("tasks", [])
check([t["name"] for t in tasks] == ["click", "conversion"], "summary eval.tasks: click, conversion")
p1, p2 = (open(f"{w}/p{n}.csv").read() for n in (1, 2))
check(p1 == p2, "the checkpoint's predictions are the same on 1 and 2 ranks")
lines = p1.splitlines()
check(lines[0] == "row,probability_click,label_click,probability_conversion,label_conversion",
      f"predictions header: {lines[0]}")
rows = [l.split(",") for l in lines[1:]]
tsv = [l.split("\t") for l in open(f"{w}/eval.tsv").read().splitlines()]
col = {name: i for i, name in enumerate(tsv[0])}
want = {"click": [r[col["label"]] for r in tsv[1:]], "conversion": [r[col["conversion"]] for r in tsv[1:]]}
def auc(ps, ys):
    pos = [p for p, y in zip(ps, ys) if y > 0.5]
    neg = [p for p, y in zip(ps, ys) if y <= 0.5]
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg) / (len(pos) * len(neg))
logs = {n: open(f"{w}/p{n}.log").read() for n in (1, 2)}
for t, task in enumerate(tasks):
    name = task["name"]
    labels = [r[2 + 2 * t] for r in rows]
    check([float(x) if x else None for x in labels] == [float(x) if x else None for x in want[name]],
          f"{name}: labels carried through, empty where missing")
    ps = [float(r[1 + 2 * t]) for r, y in zip(rows, labels) if y]
    ys = [float(y) for y in labels if y]
    check(task["labelled"] == len(ys) and (name == "click") == (len(ys) == 300),
          f"{name}: {task['labelled']} labelled rows of 300")
    clamp = [min(max(p, 1e-7), 1 - 1e-7) for p in ps]
    ll = -sum(y * math.log(p) + (1 - y) * math.log(1 - p) for p, y in zip(clamp, ys)) / len(ys)
    check(abs(task["auc"] - auc(ps, ys)) < 1e-9 and abs(task["logloss"] - ll) < 1e-6,
          f"{name}: summary auc {task['auc']:.6f} logloss {task['logloss']:.6f} = plain "
          f"{auc(ps, ys):.6f} {ll:.6f}")
    m = [re.search(rf"task {name}: auc ([0-9.]+)  logloss ([0-9.]+)", logs[n]) for n in (1, 2)]
    check(all(m) and m[0].groups() == m[1].groups() and float(m[0].group(1)) == round(task["auc"], 6)
          and float(m[0].group(2)) == round(task["logloss"], 6),
          f"{name}: lemrt_predict on 1 and 2 ranks prints the summary's auc and logloss")
check(s1["eval"]["auc"] == tasks[0]["auc"], "the summary's top-level eval is the first task's")
single = json.load(open(f"{w}/single.json"))["eval"]
zero = json.load(open(f"{w}/weight0.json"))["eval"]["tasks"]
keys = ("auc", "logloss", "ne", "calibration", "gauc")
check([zero[0][k] for k in keys] == [single[k] for k in keys],
      f"conversion weight 0: the click head's metrics = the single-task model's ({single['auc']})")
check(zero[1]["auc"] != tasks[1]["auc"], "the conversion weight changes the conversion head")
header = open(f"{w}/metrics.csv").readline().strip().split(",")
last = open(f"{w}/metrics.csv").read().splitlines()[-1].split(",")
for name, task in zip(("click", "conversion"), tasks):
    i = header.index(f"eval_auc_{name}") if f"eval_auc_{name}" in header else -1
    check(i > 0 and abs(float(last[i]) - task["auc"]) < 1e-6 and
          f"eval_gauc_{name}" in header, f"metrics CSV: {name}'s columns, auc {last[i] if i > 0 else None}")
def npy(name):
    b = open(f"{w}/{name}.npy", "rb").read()
    hl = struct.unpack_from("<H", b, 8)[0]
    return struct.unpack("<%df" % ((len(b) - 10 - hl) // 4), b[10 + hl:])
# A head: the top MLP [16 + 15 pairwise dots = 31 -> 32 -> 1].
heads = [npy("click"), npy("conversion")]
check(len(heads[0]) == len(heads[1]) == 31 * 32 + 32 + 32 + 1 and heads[0] != heads[1],
      f"lemrt_ckpt export --task: two different heads of {len(heads[0])} parameters")
if fails:
    print("FAILED:", len(fails)); sys.exit(1)
print("predict multi-task: all passed")
PY
