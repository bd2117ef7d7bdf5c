#!/usr/bin/env bash
# The model-quality levers (docs/training.md) with pipelining, minibatching,
# quantization and checkpoints, end to end through mpirun on
# tests/testdata/levers_dlrm.pbtxt (row-wise Adagrad, weight decay in both
# modes, learning-rate schedules, a quantized table, cross-term data):
#  - the threaded pipeline equals the one-thread pipelined schedule bit for
#    bit, and an unpipelined run trains too;
#  - vocabulary-dimension minibatching (a small unique-id limit) gives the
#    same model (params_l2 within 1e-5 relative);
#  - a run resumed from its step-10 checkpoint reaches the uninterrupted
#    run's model_checksum; the final checkpoint saved on 4 ranks restores on
#    2 and 3 ranks with the saved checksum (the row-wise accumulators
#    re-sharded); each such run logs the restore of its step and trains only
#    the steps after it (tests/summary_lib.sh); lemrt_ckpt exports the
#    row-wise table's slots as [vocab x 1];
#  - the metrics CSV shows the scheduled rates;
#  - the DCN-v2 and concat interactions train through the same pipelining,
#    minibatching and checkpoint checks, and the summary names the model;
#  - dropout in both MLPs: the threaded pipeline equals the one-thread
#    schedule, 1 and 4 ranks train the 2-rank model (params_l2 within 1e-5
#    relative: the masks follow the global batch, not the rank), a resume
#    reaches the uninterrupted checksum, and the model differs from the one
#    trained without dropout.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/levers_dlrm.pbtxt"

train() {  # train NP NAME OVERRIDE ARGS...: must succeed
  local np="$1" name="$2" override="$3"; shift 3
  timeout 300 mpirun --oversubscribe --bind-to none -np "$np" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$override" --summary_json="$work/$name.json" "$@" \
    > "$work/$name.log" 2>&1 \
    || { cat "$work/$name.log"; echo "FAILED: lemrt_train $name on $np ranks"; exit 1; }
}

train 2 pipe "" --metrics_csv="$work/metrics.csv"
train 2 inline "sparse_core { pipeline_without_threads: true }"
train 2 nopipe "sparse_core { disable_full_embedding_pipelining: true }"
train 2 minibatched "sparse_core { max_unique_ids_per_partition: 6 }"
ck="$work/ck"
train 4 full "" --checkpoint_dir="$ck" --checkpoint_every=10
train 4 resumed "" --restore_from="$ck/step-00000010"
train 2 reshard2 "" --restore_from="$ck"
train 3 reshard3 "" --restore_from="$ck"
"$LEMRT_BIN/lemrt_ckpt" export "$ck" --table=a --out="$work/a_slots.npy" --slots > "$work/export.log"
# The other interactions (a small cross network, the plain concatenation):
# pipelined = one-thread schedule, minibatched = not, resumed = uninterrupted,
# restored on another world size = saved.
for m in dcn concat; do
  [[ $m == dcn ]] && model="model { dcn_v2 { num_layers: 2 low_rank: 8 } }" || model="model { concat { } }"
  train 2 ${m}_pipe "$model"
  train 2 ${m}_inline "$model sparse_core { pipeline_without_threads: true }"
  train 2 ${m}_minibatched "$model sparse_core { max_unique_ids_per_partition: 6 }"
  train 4 ${m}_full "$model" --checkpoint_dir="$work/ck_$m" --checkpoint_every=10
  train 4 ${m}_resumed "$model" --restore_from="$work/ck_$m/step-00000010"
  train 2 ${m}_reshard2 "$model" --restore_from="$work/ck_$m"
done

drop="model { bottom_mlp_dropout: 0.2 top_mlp_dropout: 0.3 }"
train 2 drop_pipe "$drop"
train 2 drop_inline "$drop sparse_core { pipeline_without_threads: true }"
train 1 drop_np1 "$drop"
train 4 drop_np4 "$drop" --checkpoint_dir="$work/ck_drop" --checkpoint_every=10
train 4 drop_resumed "$drop" --restore_from="$work/ck_drop/step-00000010"
# Each restored what it was given (a run that trained from step 0 instead
# would reach the same checksums: training is deterministic).
source "$LEMRT_SRC/tests/summary_lib.sh"
for name in resumed {dcn,concat,drop}_resumed; do expect_resumed "$work/$name.log" "$work/$name.json" 10; done
for name in reshard2 reshard3 {dcn,concat}_reshard2; do expect_resumed "$work/$name.log" "$work/$name.json" 20; done

python3 - "$work" "$ck/step-00000020/manifest.pbtxt" <<'PY'
import csv, json, math, re, sys
w, manifest = sys.argv[1], sys.argv[2]
s = {n: json.load(open(f"{w}/{n}.json"))
     for n in ["pipe", "inline", "nopipe", "minibatched", "full", "resumed", "reshard2", "reshard3"]}
fails = []
for n, r in s.items():
    print(f"{n:12s} world {r['world_size']} checksum {r['model_checksum']} params_l2 "
          f"{r['params_l2']:.6f} auc {r['eval']['auc']:.4f}")
    if not 0.5 < r["eval"]["auc"] < 1: fails.append(f"{n}: eval auc {r['eval']['auc']}")
if s["inline"]["model_checksum"] != s["pipe"]["model_checksum"]:
    fails.append("the threaded pipeline differs from the one-thread pipelined schedule")
a, b = s["pipe"]["params_l2"], s["minibatched"]["params_l2"]
if abs(a - b) > 1e-5 * abs(a): fails.append(f"minibatched params_l2 {b} vs {a}")
full = s["full"]["model_checksum"]
saved = re.search(r'model_checksum: "([0-9a-f]+)"', open(manifest).read()).group(1)
if saved != full: fails.append("the final checkpoint's checksum differs from the run's")
for n in ["resumed", "reshard2", "reshard3"]:
    if s[n]["model_checksum"] != full: fails.append(f"{n}: model differs from the 4-rank run")
for m, want in [("dcn", "dcn_v2 (2 layers, rank 8)"), ("concat", "concat")]:
    r = {k: json.load(open(f"{w}/{m}_{k}.json"))
         for k in ["pipe", "inline", "minibatched", "full", "resumed", "reshard2"]}
    print(f"{m:7s} {r['pipe']['model']} auc {r['pipe']['eval']['auc']:.4f}")
    if r["pipe"]["model"]["interaction"] != want: fails.append(f"{m}: summary model {r['pipe']['model']}")
    if r["pipe"]["model"]["params"] <= s["pipe"]["model"]["params"] and m == "dcn":
        fails.append(f"dcn: {r['pipe']['model']['params']} params, no more than dot's")
    if not 0.5 < r["pipe"]["eval"]["auc"] < 1: fails.append(f"{m}: eval auc {r['pipe']['eval']['auc']}")
    if r["inline"]["model_checksum"] != r["pipe"]["model_checksum"]:
        fails.append(f"{m}: threaded pipeline differs from the one-thread schedule")
    a, b = r["pipe"]["params_l2"], r["minibatched"]["params_l2"]
    if abs(a - b) > 1e-5 * abs(a): fails.append(f"{m}: minibatched params_l2 {b} vs {a}")
    for k in ["resumed", "reshard2"]:
        if r[k]["model_checksum"] != r["full"]["model_checksum"]: fails.append(f"{m}: {k} differs")
if s["pipe"]["model"]["interaction"] != "dot": fails.append(f"default model {s['pipe']['model']}")
d = {k: json.load(open(f"{w}/drop_{k}.json")) for k in ["pipe", "inline", "np1", "np4", "resumed"]}
print(f"dropout params_l2 np1 {d['np1']['params_l2']:.9f} np2 {d['pipe']['params_l2']:.9f} "
      f"np4 {d['np4']['params_l2']:.9f}; without dropout {s['pipe']['params_l2']:.9f}; "
      f"auc {d['pipe']['eval']['auc']:.4f}")
if d["inline"]["model_checksum"] != d["pipe"]["model_checksum"]:
    fails.append("dropout: threaded pipeline differs from the one-thread schedule")
a = d["pipe"]["params_l2"]
for k in ["np1", "np4"]:
    if abs(d[k]["params_l2"] - a) > 1e-5 * a: fails.append(f"dropout {k}: params_l2 {d[k]['params_l2']} vs {a}")
if abs(a - s["pipe"]["params_l2"]) < 1e-4 * a: fails.append("dropout did not change the model")
if d["resumed"]["model_checksum"] != d["np4"]["model_checksum"]: fails.append("dropout: resumed differs")
if not 0.5 < d["pipe"]["eval"]["auc"] < 1: fails.append(f"dropout: eval auc {d['pipe']['eval']['auc']}")
text = open(manifest).read()
if "format_version: 4" not in text or "row_slots: 1" not in text:
    fails.append("manifest lacks format_version 4 / row_slots 1")
head = open(f"{w}/a_slots.npy", "rb").read(128).decode("latin1")
if "'shape': (20000, 1)" not in head: fails.append(f"exported slots header {head!r}")
rows = list(csv.DictReader(open(f"{w}/metrics.csv")))
last = rows[-1]
# Step 20 (0-based 19) is the end of both decays: the dense rate's cosine to
# 0.1, the embedding rate's polynomial (to 0 over steps 6..19: factor 1/14^2).
if abs(float(last["dense_lr"]) - 0.01 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 15 / 16)))) > 1e-7:
    fails.append(f"dense_lr at step 20: {last['dense_lr']}")
if abs(float(last["embedding_lr"]) - 0.05 / 14**2) > 1e-7:
    fails.append(f"embedding_lr at step 20: {last['embedding_lr']}")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("ok")
PY
