#!/usr/bin/env bash
# End to end through mpirun: world-size independence (docs/architecture.md
# "Determinism"). The same config trained on 1, 2, 3 and 4 ranks gives one
# model_checksum, bit for bit:
#   - small_dlrm (multi-hot, a table shared by two features) with the total
#     SparseCore count held at 12 (1x12, 2x6, 3x4, 4x3), pipelined, and not
#     pipelined on 1 and 3 ranks (pipelining changes the arithmetic, so runs
#     compare within one setting);
#   - a one-hot variant at 4 SparseCores per chip (so 4..16 SparseCores), with
#     hot rows and vocabulary-dimension minibatching, not pipelined;
#   - a long run (1200 steps, Adagrad from a near-zero accumulator, a tiny
#     model) on 1 and 2 ranks (4 SparseCores in all);
#   - every optimizer (tables: SGD, Adagrad, Adam, FTRL, row-wise Adagrad;
#     dense Adam; dense FTRL does not exist), one-hot, pipelined, on 1, 2,
#     3, 4 and 8 ranks x 2 SparseCores, with a checkpoint every 15 steps; the
#     2-rank run's step-15 checkpoint continued on 4 ranks reaches the same
#     model as the uninterrupted runs (and logs that restore and trains only
#     steps 16-30: tests/summary_lib.sh);
#   - one-hot with steps split along the sample dimension (no hot rows, a
#     partition limit of 4) on 1 and 3 ranks;
#   - small_dlrm (multi-hot) with vocabulary-dimension minibatches (a
#     partition limit of 12; 5-11 minibatches a step) at 8 SparseCores as
#     1 x 8, 2 x 4 and 8 x 1 (the minibatch boundaries are each source
#     SparseCore's, so they do not follow the chips; 1 x 8 and 8 x 1 differed
#     while one chip merged its SparseCores' partitions); and the same with
#     bf16 tables (stochastic rounding keyed by table, row and step) and the
#     bf16 exchange, not pipelined, at 1 x 8 and 8 x 1;
#   - many levers at once, 20 steps at 1-4 ranks x 12/np SparseCores: bf16
#     dense products (fp32 with a note where the CPU lacks avx512_bf16 and
#     AMX), dropout, an evaluation at step 10, bf16 tables (one with hot
#     rows), id shuffling and the bf16 exchange;
#   - DCN-v2 (2 low-rank cross layers), 20 steps at 1 x 12 and 3 x 4;
#   - params_l2 equal wherever the checksums are (summed exactly).
# The auto block (48 of 192) on 3 ranks (64 samples each) is a config error
# naming the block and a fix.
# The same config run twice on one world size gives the same checksum, and
# training.world_size_independent (set here; off by default) false still
# trains (with float sums: a model other than the exact sums').
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
small="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
# One-hot: every feature of small_dlrm with one id (a1 and a2 share table a),
# 10 hot rows of table a, and a partition limit that splits steps into
# vocabulary-dimension minibatches.
sed -e 's/ max_sequence_length: [0-9]*//' \
    -e 's/name: "a" vocab_size: 20000 dim: 16/& hot_rows: 10/' "$small" > "$work/onehot.pbtxt"
echo 'sparse_core { max_ids_per_partition: 8 }' >> "$work/onehot.pbtxt"
# One-hot without hot rows and a limit of 4: the hottest rows alone exceed
# it, so steps split along the sample dimension too (on every world size).
sed -e 's/ max_sequence_length: [0-9]*//' "$small" > "$work/split.pbtxt"
echo 'sparse_core { max_ids_per_partition: 4 }' >> "$work/split.pbtxt"
# Blocks of 16 of the 192-sample batch: whole blocks at 1, 2, 3 and 4 ranks
# (the auto block, 48, covers 1, 2 and 4).
block='training { world_size_independent: true gradient_block_samples: 16 }'
# Every optimizer: one-hot features (any SparseCore count), a 192-sample
# batch in blocks of 8 (whole blocks on 1, 2, 3, 4 and 8 ranks).
cat > "$work/opt.pbtxt" <<'PB'
tables { name: "s" vocab_size: 400 dim: 8 optimizer { sgd { } } }
tables { name: "g" vocab_size: 300 dim: 8 optimizer { adagrad { initial_accumulator: 1e-6 } } }
tables { name: "a" vocab_size: 200 dim: 8 optimizer { adam { } learning_rate: 0.01 } }
tables { name: "f" vocab_size: 300 dim: 8 optimizer { ftrl { l1: 0.001 l2: 0.01 } } }
tables { name: "r" vocab_size: 500 dim: 16 optimizer { rowwise_adagrad { } } }
features { name: "s1" table: "s" }
features { name: "g1" table: "g" }
features { name: "a1" table: "a" }
features { name: "f1" table: "f" }
features { name: "r1" table: "r" }
features { name: "r2" table: "r" }
model { num_dense_features: 4 bottom_mlp: [ 16, 8 ] top_mlp: [ 16, 1 ] }
training {
  global_batch: 192 steps: 30 seed: 3 eval_samples: 256 log_every: 0
  dense_learning_rate: 0.01 embedding_learning_rate: 0.05
  dense_optimizer { adam { } }
  world_size_independent: true gradient_block_samples: 8
}
topology { sparse_cores_per_chip: 2 }
sparse_core { disable_full_embedding_pipelining: false }
PB

# Long: tiny tables and MLPs, Adagrad (tables and dense) from 1e-8.
cat > "$work/long.pbtxt" <<'PB'
tables { name: "u" vocab_size: 300 dim: 4 combiner: SUM optimizer { adagrad { initial_accumulator: 1e-8 } } }
tables { name: "v" vocab_size: 200 dim: 8 combiner: MEAN optimizer { adagrad { initial_accumulator: 1e-8 } } }
features { name: "u1" table: "u" }
features { name: "u2" table: "u" max_sequence_length: 3 }
features { name: "v1" table: "v" max_sequence_length: 4 }
model { num_dense_features: 4 bottom_mlp: [ 8, 4 ] top_mlp: [ 8, 1 ] }
training {
  global_batch: 32 steps: 1200 seed: 11 eval_samples: 0 log_every: 0
  dense_learning_rate: 0.05 embedding_learning_rate: 0.05
  dense_optimizer { adagrad { initial_accumulator: 1e-8 } }
}
PB

# train NP NAME CONFIG OVERRIDE [FLAGS...]: pipelining always set (left unset,
# lemrt_train chooses it from each rank's cores).
train() {
  timeout 300 mpirun --oversubscribe --bind-to none -np "$1" "$LEMRT_BIN/lemrt_train" \
    --config="$3" --override="$4" "${@:5}" --summary_json="$work/$2.json" > "$work/$2.log" 2>&1 \
    || { cat "$work/$2.log"; echo "FAILED: lemrt_train $2 on $1 ranks"; exit 1; }
}
pipe() { echo "sparse_core { disable_full_embedding_pipelining: $1 }"; }
# Pipelining changes the arithmetic (stale lookups), so runs compare within
# one setting: on (the default) for every world size, off for two.
for np in 1 2 3 4; do
  train $np small$np "$small" "topology { sparse_cores_per_chip: $((12 / np)) } $(pipe false) $block"
  train $np onehot$np "$work/onehot.pbtxt" "training { steps: 30 eval_samples: 0 } $(pipe true) $block"
done
train 2 small2b "$small" "topology { sparse_cores_per_chip: 6 } $(pipe false) $block"
train 1 off1 "$small" "topology { sparse_cores_per_chip: 12 } $(pipe true) $block"
train 3 off3 "$small" "topology { sparse_cores_per_chip: 4 } $(pipe true) $block"
train 4 float4 "$small" "topology { sparse_cores_per_chip: 3 } $(pipe false) training { world_size_independent: false }"
# The auto block (48) on 3 ranks (64 samples each): a config error.
if mpirun --oversubscribe --bind-to none -np 3 "$LEMRT_BIN/lemrt_train" --config="$small" \
    --override="topology { sparse_cores_per_chip: 4 } training { steps: 2 world_size_independent: true }" \
    > "$work/auto3.log" 2>&1; then
  echo "FAILED: the auto block on 3 ranks trained"; exit 1
fi
grep -q "training.gradient_block_samples: the local batch of 64 samples (global_batch 192 / 3 ranks) is not a whole number of 48-sample blocks" "$work/auto3.log" \
  && grep -q "set gradient_block_samples to 16" "$work/auto3.log" \
  || { cat "$work/auto3.log"; echo "FAILED: no block error on 3 ranks"; exit 1; }
# Multi-hot, vocabulary minibatches, 8 SparseCores on 1, 2 and 8 ranks.
mh='sparse_core { max_ids_per_partition: 12 }
  training { steps: 20 eval_samples: 0 world_size_independent: true gradient_block_samples: 8 }'
sed -e 's/name: "a" vocab_size: 20000 dim: 16 combiner: SUM optimizer { adagrad {} }/& dtype: BF16 slot_dtype: BF16/' \
    -e 's/name: "b" vocab_size: 5000  dim: 8  combiner: MEAN/& dtype: BF16/' "$small" > "$work/bf16.pbtxt"
grep -q 'slot_dtype: BF16' "$work/bf16.pbtxt" && grep -q 'MEAN dtype: BF16' "$work/bf16.pbtxt" \
  || { echo "FAILED: the bf16 config was not made"; exit 1; }
for np in 1 2 8; do
  train $np mh$np "$small" "topology { sparse_cores_per_chip: $((8 / np)) } $(pipe false) $mh"
done
for np in 1 8; do
  train $np bf$np "$work/bf16.pbtxt" \
    "topology { sparse_cores_per_chip: $((8 / np)) } $(pipe true) $mh sparse_core { exchange_dtype: BF16 }"
done
# Many levers at once on 1-4 ranks x 12/np SparseCores, 20 steps: bf16 dense
# products (where the CPU has them), dropout, an evaluation at step 10, bf16
# tables (one with hot rows), id shuffling and the bf16 exchange.
sed -e 's/^model { /model { bottom_mlp_dropout: 0.1 top_mlp_dropout: 0.1 /' \
    -e 's/ dtype: BF16 slot_dtype: BF16/& hot_rows: 20/' "$work/bf16.pbtxt" > "$work/mix.pbtxt"
grep -q 'hot_rows: 20' "$work/mix.pbtxt" && grep -q 'top_mlp_dropout' "$work/mix.pbtxt" \
  || { echo "FAILED: the mixed config was not made"; exit 1; }
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  sed -i 's/^model { /model { dense_dtype: BF16 /' "$work/mix.pbtxt"
  touch "$work/mix_bf16_dense"
else
  echo "note this CPU lacks avx512_bf16 and AMX: the mixed runs keep fp32 dense products"
fi
mix='sparse_core { shuffle_ids: true exchange_dtype: BF16 }
  training { steps: 20 eval_every: 10 eval_samples: 384 world_size_independent: true gradient_block_samples: 16 }'
for np in 1 2 3 4; do
  train $np mix$np "$work/mix.pbtxt" "topology { sparse_cores_per_chip: $((12 / np)) } $(pipe true) $mix"
  grep -q "eval at step 10:" "$work/mix$np.log" || { cat "$work/mix$np.log"; echo "FAILED: mix$np: no eval at step 10"; exit 1; }
done
# DCN-v2 (a low-rank cross network instead of the dot interaction) at 1 x 12 and 3 x 4.
dcn='model { dcn_v2 { num_layers: 2 low_rank: 8 } }
  training { steps: 20 eval_samples: 384 world_size_independent: true gradient_block_samples: 16 }'
train 1 dcn1 "$small" "topology { sparse_cores_per_chip: 12 } $(pipe true) $dcn"
train 3 dcn3 "$small" "topology { sparse_cores_per_chip: 4 } $(pipe true) $dcn"
train 1 split1 "$work/split.pbtxt" "training { steps: 20 eval_samples: 0 } $(pipe true) $block"
train 3 split3 "$work/split.pbtxt" "training { steps: 20 eval_samples: 0 } $(pipe true) $block"
# Every optimizer at 1-4 and 8 ranks; a 2-rank checkpoint resumed on 4.
for np in 1 2 3 4 8; do
  train $np opt$np "$work/opt.pbtxt" "" --checkpoint_dir="$work/ck_opt$np" --checkpoint_every=15
done
train 4 resume4 "$work/opt.pbtxt" "" --restore_from="$work/ck_opt2/step-00000015" \
  --checkpoint_dir="$work/ck_resume4" --checkpoint_every=15
# It restored step 15 (from step 0 it would reach the same checksum too).
source "$LEMRT_SRC/tests/summary_lib.sh"
expect_resumed "$work/resume4.log" "$work/resume4.json" 15

train 1 long1 "$work/long.pbtxt" "topology { sparse_cores_per_chip: 4 } $(pipe true) training { world_size_independent: true }"
train 2 long2 "$work/long.pbtxt" "topology { sparse_cores_per_chip: 2 } $(pipe true) training { world_size_independent: true }"

python3 - "$work" <<'PY'
import glob, json, os, sys
w = sys.argv[1]
s = {os.path.basename(p)[:-5]: json.load(open(p)) for p in glob.glob(f"{w}/*.json")}
fails = []
def same(names, what):
    sums = {n: s[n]["model_checksum"] for n in names}
    losses = {n: s[n]["train"]["loss_last"] for n in names}
    l2 = {n: s[n]["params_l2"] for n in names}
    print(f"{what}: checksums {sums}")
    if len(set(sums.values())) != 1: fails.append(f"{what}: checksums differ {sums}")
    if len(set(losses.values())) != 1: fails.append(f"{what}: last losses differ {losses}")
    if len(set(l2.values())) != 1: fails.append(f"{what}: params_l2 differ {l2}")
    evals = {n: (s[n]["eval"]["auc"], s[n]["eval"]["logloss"]) for n in names if s[n]["eval"]["samples"] > 0}
    if len(set(evals.values())) > 1: fails.append(f"{what}: eval metrics differ {evals}")
same([f"small{n}" for n in (1, 2, 3, 4)] + ["small2b"], "small_dlrm, 12 SparseCores, 1-4 ranks, pipelined")
same(["off1", "off3"], "small_dlrm, 12 SparseCores, 1 and 3 ranks, not pipelined")
same([f"onehot{n}" for n in (1, 2, 3, 4)], "one-hot, hot rows, minibatches, 1-4 ranks x 4 SparseCores")
same(["long1", "long2"], "1200 steps, Adagrad from 1e-8, 1 and 2 ranks")
same(["split1", "split3"], "one-hot, sample-dimension minibatches, 1 and 3 ranks")
same(["mh1", "mh2", "mh8"], "multi-hot, vocabulary minibatches, 8 SparseCores, 1, 2 and 8 ranks")
same(["bf1", "bf8"], "multi-hot, bf16 tables and exchange, minibatches, 1 x 8 and 8 x 1")
same([f"mix{n}" for n in (1, 2, 3, 4)],
     "bf16 dense, dropout, mid-run eval, bf16 tables, hot rows, shuffle, bf16 exchange, 1-4 ranks x 12/np")
same(["dcn1", "dcn3"], "DCN-v2, 1 x 12 and 3 x 4")
for n in ("mix1", "mix4"):
    if not s[n]["preprocess"]["hot_ids"] > 0: fails.append(f"{n}: no id looked up in a hot row")
    if os.path.exists(f"{w}/mix_bf16_dense") and "bf16 products" not in s[n]["threads"]["gemm_backend"]:
        fails.append(f"{n}: dense products not bf16: {s[n]['threads']['gemm_backend']}")
for n in ("dcn1", "dcn3"):
    if not s[n]["model"]["interaction"].startswith("dcn_v2"): fails.append(f"{n}: interaction {s[n]['model']['interaction']}")
for n in ("mh1", "mh8", "bf1"):
    if not s[n]["preprocess"]["mean_minibatches"] > 2:
        fails.append(f"{n}: {s[n]['preprocess']['mean_minibatches']} minibatches a step, not several")
for n in ("split1", "split3"):
    if not int(s[n]["preprocess"].get("sample_split_steps", 0)) > 0:
        fails.append(f"{n}: no step split along the sample dimension")
same([f"opt{n}" for n in (1, 2, 3, 4, 8)] + ["resume4"],
     "SGD/Adagrad/Adam/FTRL/row-wise Adagrad tables, Adam dense, 1-4 and 8 ranks, resumed 2 -> 4")
if s["float4"]["model_checksum"] == s["small4"]["model_checksum"]:
    fails.append("world_size_independent false gives the model of exact sums (the switch does nothing)")
for n, j in s.items():
    want = (1200 if n.startswith("long") else 30 if n.startswith(("onehot", "opt", "resume"))
            else 20 if n.startswith(("split", "mh", "bf", "mix", "dcn")) else 50)
    if j["steps"] != want: fails.append(f"{n}: {j['steps']} steps, not {want}")
if not s["small1"]["eval"]["samples"] > 0: fails.append("no eval samples")
if s["small1"]["world_size"] != 1 or s["small4"]["world_size"] != 4: fails.append("world_size wrong")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("1 passed, 0 failed")
PY
