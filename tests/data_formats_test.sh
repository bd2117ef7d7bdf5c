#!/usr/bin/env bash
# The user's own data end to end (docs/data.md): the multi-hot example data set
# (scripts/gen_multihot_data.py, small) as gzip TFRecord, plain TFRecord, TSV
# with a header, and binary files converted from the TFRecord by lemrt_convert
# trains the same model at 1, 2 and 4 ranks (4 SparseCores in all: the
# features are multi-hot; training.world_size_independent): one
# model_checksum for every format at each world size, the same at 1 x 4,
# 2 x 2 and 4 x 1 SparseCores with every exported parameter, the eval AUC and
# the params_l2 equal (4 x 1 differed in the last bits while the stacked
# tables' rotation followed the SparseCores per chip); two epochs run the derived
# number of steps, and evaluation scores every eval row exactly once.
# Needs LEMRT_BIN and LEMRT_SRC.
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/examples/configs/multihot_tfrecord.pbtxt"
gen="$LEMRT_SRC/scripts/gen_multihot_data.py"
python3 "$gen" --out "$work/gz" --train_rows 700 --eval_rows 250 --seed 3 --gzip > /dev/null
python3 "$gen" --out "$work/plain" --train_rows 700 --eval_rows 250 --seed 3 > /dev/null
cmp -s "$work/gz/train.tsv" "$work/plain/train.tsv" || { echo "FAILED: generator not deterministic"; exit 1; }

common='training { global_batch: 64 log_every: 0 world_size_independent: true }
  data { shuffle_window: 200 }
  sparse_core { disable_full_embedding_pipelining: false }'
tfrecord() { echo "data { tfrecord { train_path: \"$1/train.tfrecord$2\" eval_path: \"$1/eval.tfrecord$2\" } }"; }
text="data { text { train_path: \"$work/plain/train.tsv\" eval_path: \"$work/plain/eval.tsv\" header: true } }"
binary="data { binary { train_path: \"$work/train.bin\" eval_path: \"$work/eval.bin\" } }"
for split in train eval; do
  "$LEMRT_BIN/lemrt_convert" --config="$config" --override="$(tfrecord "$work/gz" .gz)" \
    --split=$split --out="$work/$split.bin" > /dev/null
done

train() {  # train NP NAME OVERRIDE
  timeout 300 mpirun --oversubscribe --bind-to none -np "$1" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$common topology { sparse_cores_per_chip: $((4 / $1)) } $3" \
    --summary_json="$work/$2.json" \
    --checkpoint_dir="$work/ck_$2" > "$work/$2.log" 2>&1 \
    || { cat "$work/$2.log"; echo "FAILED: lemrt_train $2"; exit 1; }
}
for np in 1 2 4; do
  train $np gz$np "$(tfrecord "$work/gz" .gz)"
  train $np tf$np "$(tfrecord "$work/plain" "")"
  train $np tsv$np "$text"
  train $np bin$np "$binary"
done
for np in 1 2 4; do
  for t in users items categories tags; do
    "$LEMRT_BIN/lemrt_ckpt" export "$work/ck_gz$np" --table=$t --out="$work/gz$np.$t.npy" > /dev/null
  done
done

python3 - "$work" <<'PY'
import glob, json, struct, sys
w = sys.argv[1]
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fails.append(what)
def floats_npy(path):
    b = open(path, "rb").read()
    n = struct.unpack_from("<H", b, 8)[0]
    data = b[10 + n:]
    return struct.unpack("<%df" % (len(data) // 4), data)
def floats_dense(np):
    path = glob.glob(f"{w}/ck_gz{np}/step-*/dense.bin")[0]
    b = open(path, "rb").read()
    return struct.unpack("<%df" % (len(b) // 4), b)
s = {n: json.load(open(f"{w}/{n}.json")) for n in
     [f"{f}{np}" for f in ("gz", "tf", "tsv", "bin") for np in (1, 2, 4)]}
for np in (1, 2, 4):
    sums = {f: s[f"{f}{np}"]["model_checksum"] for f in ("gz", "tf", "tsv", "bin")}
    check(len(set(sums.values())) == 1, f"{np} ranks: one model from every format {sums}")
for np in (2, 4):
    check(s["gz1"]["model_checksum"] == s[f"gz{np}"]["model_checksum"],
          f"1 x 4 and {np} x {4 // np} SparseCores: one model_checksum ({s['gz1']['model_checksum']})")
    check(s["gz1"]["params_l2"] == s[f"gz{np}"]["params_l2"],
          f"{np} ranks: params_l2 {s[f'gz{np}']['params_l2']} vs {s['gz1']['params_l2']}")
for n, j in s.items():
    check(j["steps"] == 22 and abs(j["train"]["epochs"] - 2) < 1e-9 and
          j["train"]["steps_per_epoch"] == 11 and j["train"]["samples"] == 1400,
          f"{n}: 2 epochs of 700 rows = {j['steps']} steps, {j['train']['samples']} samples")
    check(j["eval"]["samples"] == 250, f"{n}: eval scored {j['eval']['samples']} of 250 rows")
for np in (2, 4):
    check(s[f"gz{np}"]["eval"]["auc"] == s["gz1"]["eval"]["auc"],
          f"{np} ranks: eval auc {s[f'gz{np}']['eval']['auc']:.6f} vs {s['gz1']['eval']['auc']:.6f}")
    worst = 0.0
    for t in ("users", "items", "categories", "tags"):
        a, b = floats_npy(f"{w}/gz1.{t}.npy"), floats_npy(f"{w}/gz{np}.{t}.npy")
        worst = max(worst, max(abs(x - y) for x, y in zip(a, b)))
    a, b = floats_dense(1), floats_dense(np)
    check(len(a) == len(b), f"{np} ranks: dense file sizes")
    worst = max(worst, max(abs(x - y) for x, y in zip(a, b)))
    check(worst == 0, f"{np} ranks: every parameter equal to 1 rank's (max diff {worst:.2e})")
print("auc", s["gz1"]["eval"]["auc"], "checksums",
      {np: s[f"gz{np}"]["model_checksum"] for np in (1, 2, 4)})
if fails:
    print("FAILED:", len(fails)); sys.exit(1)
print("data formats: all passed")
PY
