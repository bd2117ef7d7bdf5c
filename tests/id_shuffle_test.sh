#!/usr/bin/env bash
# Id shuffling end to end (docs/preprocessing.md#id-shuffling;
# base/id_permutation.h, host/preprocess/batch_id_shuffle.h):
#  1. one-hot features (small_dlrm with one id per feature and sample): a run
#     with sparse_core.shuffle_ids trains the same model bit for bit as one
#     without, on 1, 2 and 4 ranks: equal model_checksum, and the tables that
#     lemrt_ckpt exports from both checkpoints are the same bytes (original
#     row order);
#  2. multi-hot features (small_dlrm as it is): the same model up to the
#     summation order of a sample's pooled ids (params_l2 and eval logloss
#     within 1e-5 relative, exported tables within 1e-5 absolute);
#  3. checkpoints stay layout-free: a shuffled checkpoint saved on 2 ranks
#     restores unshuffled on 4 ranks, and an unshuffled one saved on 1 rank
#     restores shuffled (another id_shuffle_seed, one table opting out) on
#     2 ranks, each reaching the saved model_checksum, logging the restore
#     of step 12 and training no further step (tests/summary_lib.sh).
# It prints table a's partition skew with and without shuffling (4 ranks)
# for information: whether shuffling lowers it depends on the ids
# (docs/preprocessing.md#id-shuffling).
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
multihot="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
onehot="$work/onehot.pbtxt"
sed 's/ max_sequence_length: [0-9]*//' "$multihot" > "$onehot"
sed '/name: "b"/s/ }$/ shuffle_ids: false }/' "$onehot" > "$work/onehot_b_unshuffled.pbtxt"
grep -q 'shuffle_ids: false' "$work/onehot_b_unshuffled.pbtxt"
on="sparse_core { shuffle_ids: true }"
steps="training { steps: 12 }"

train() {  # train CONFIG NP NAME OVERRIDE ARGS...: must succeed
  local config="$1" np="$2" name="$3" override="$4"; shift 4
  timeout 300 mpirun --oversubscribe --bind-to none -np "$np" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$steps $override" --summary_json="$work/$name.json" "$@" \
    > "$work/$name.log" 2>&1 \
    || { cat "$work/$name.log"; echo "FAILED: lemrt_train $name on $np ranks"; exit 1; }
}
export_table() {  # export_table CKPT TABLE OUT
  "$LEMRT_BIN/lemrt_ckpt" export "$1" --table="$2" --out="$3" > /dev/null \
    || { echo "FAILED: lemrt_ckpt export $1 --table=$2"; exit 1; }
}

for np in 1 2 4; do
  train "$onehot" $np plain$np "" --checkpoint_dir="$work/ck_plain$np"
  train "$onehot" $np shuffled$np "$on" --checkpoint_dir="$work/ck_shuffled$np"
  for t in a b c; do
    export_table "$work/ck_plain$np" $t "$work/plain$np-$t.npy"
    export_table "$work/ck_shuffled$np" $t "$work/shuffled$np-$t.npy"
    cmp -s "$work/plain$np-$t.npy" "$work/shuffled$np-$t.npy" \
      || { echo "FAILED: np $np: table $t exported from the shuffled run differs"; exit 1; }
  done
done
train "$multihot" 2 mh_plain "" --checkpoint_dir="$work/ck_mh_plain"
train "$multihot" 2 mh_shuffled "$on" --checkpoint_dir="$work/ck_mh_shuffled"
export_table "$work/ck_mh_plain" a "$work/mh_plain-a.npy"
export_table "$work/ck_mh_shuffled" a "$work/mh_shuffled-a.npy"
train "$onehot" 4 restore_unshuffled "" --restore_from="$work/ck_shuffled2"
train "$work/onehot_b_unshuffled.pbtxt" 2 restore_shuffled \
  "sparse_core { shuffle_ids: true id_shuffle_seed: 5 }" --restore_from="$work/ck_plain1"
# Each restored the final checkpoint (a run that trained from step 0 instead
# would reach the same checksum: training is deterministic).
source "$LEMRT_SRC/tests/summary_lib.sh"
for name in restore_unshuffled restore_shuffled; do expect_resumed "$work/$name.log" "$work/$name.json" 12; done

python3 - "$work" <<'PY'
import json, struct, sys
w = sys.argv[1]
s = {}
def summary(n):
    if n not in s: s[n] = json.load(open(f"{w}/{n}.json"))
    return s[n]
def rel(a, b): return abs(a - b) / max(abs(a), abs(b), 1e-30)
def npy(path):  # float32 C-order .npy as a flat list
    b = open(path, "rb").read()
    header_len = struct.unpack("<H", b[8:10])[0]
    data = b[10 + header_len:]
    return struct.unpack(f"<{len(data) // 4}f", data)
fails = []
for np in [1, 2, 4]:
    a, b = summary(f"plain{np}")["model_checksum"], summary(f"shuffled{np}")["model_checksum"]
    print(f"one-hot np {np}: model_checksum unshuffled {a} shuffled {b}")
    if a != b: fails.append(f"np {np}: one-hot shuffled model_checksum differs")
a, b = summary("mh_plain"), summary("mh_shuffled")
for key, get in [("params_l2", lambda j: j["params_l2"]), ("eval.logloss", lambda j: j["eval"]["logloss"])]:
    d = rel(get(a), get(b))
    print(f"multi-hot np 2 {key}: unshuffled {get(a)!r} shuffled {get(b)!r} rel diff {d:.2e}")
    if d > 1e-5: fails.append(f"multi-hot: {key} differs beyond summation order")
x, y = npy(f"{w}/mh_plain-a.npy"), npy(f"{w}/mh_shuffled-a.npy")
diff = max(abs(u - v) for u, v in zip(x, y))
print(f"multi-hot np 2 table a: {len(x)} floats, max abs diff {diff:.2e}")
if len(x) != len(y) or diff > 1e-5: fails.append("multi-hot: exported table a differs")
if x == y: print("  (bit-identical)")
for saved, restored in [("shuffled2", "restore_unshuffled"), ("plain1", "restore_shuffled")]:
    a, b = summary(saved)["model_checksum"], summary(restored)["model_checksum"]
    print(f"checkpoint {saved} -> {restored}: {a} -> {b}")
    if a != b: fails.append(f"{saved} restored as {restored} changed the model")
def skew(n, table):
    return next(t["partition_skew"] for t in summary(n)["tables"] if t["name"] == table)
print(f"table a partition skew on 4 ranks: unshuffled {skew('plain4', 'a'):.3f}x, "
      f"shuffled {skew('shuffled4', 'a'):.3f}x")
if fails:
    print("FAILED: " + "; ".join(fails))
    sys.exit(1)
print("id shuffling: ok")
PY
