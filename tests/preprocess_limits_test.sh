#!/usr/bin/env bash
# Partition limits end to end on 2 ranks (docs/preprocessing.md):
#  1. lemrt_limits --headroom=1.0 over the run's training batches, fed back as
#     the limits file: zero drops and one minibatch per step;
#  2. the same data with the limits halved: more minibatches, the same model
#     (params_l2 and eval logloss within 1e-5 relative);
#  3. limits at a quarter, minibatching off, dropping off: a clear error on
#     every rank (table, source and destination SparseCore, observed, limit)
#     and a non-zero exit;
#  4. the same with allow_id_dropping: the run finishes and reports drops.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
steps=12
base="training { steps: $steps eval_samples: 384 } data { synthetic { zipf_fraction: 0.2 } }"
run() {  # run NAME OVERRIDE: trains on 2 ranks, returns lemrt_train's status
  timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$base $2" --summary_json="$work/$1.json" > "$work/$1.log" 2>&1
}

timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_limits" \
  --config="$config" --override="$base" --batches=$steps --headroom=1.0 \
  --out="$work/limits.pbtxt" > "$work/limits.log" 2>&1 \
  || { cat "$work/limits.log"; echo "FAILED: lemrt_limits"; exit 1; }
cat "$work/limits.log"
# Halved and quartered copies of the limits file (at least 1).
for d in 2 4; do
  awk -v d=$d '/max_(unique_)?ids_per_partition:/ { v = int($2 / d); if (v < 1) v = 1; $2 = v } { print }' \
    "$work/limits.pbtxt" > "$work/limits_$d.pbtxt"
done

run exact "sparse_core { limits_file: '$work/limits.pbtxt' }" \
  || { cat "$work/exact.log"; echo "FAILED: training with the measured limits"; exit 1; }
run half "sparse_core { limits_file: '$work/limits_2.pbtxt' }" \
  || { cat "$work/half.log"; echo "FAILED: training with halved limits"; exit 1; }
if run strict "sparse_core { limits_file: '$work/limits_4.pbtxt' disable_minibatching: true }"; then
  echo "FAILED: limits at a quarter without minibatching or dropping did not fail"; exit 1
fi
run dropping "sparse_core { limits_file: '$work/limits_4.pbtxt' disable_minibatching: true allow_id_dropping: true }" \
  || { cat "$work/dropping.log"; echo "FAILED: training with dropping"; exit 1; }

python3 - "$work" <<'PY'
import json, re, sys
w = sys.argv[1]
s = {n: json.load(open(f"{w}/{n}.json")) for n in ["exact", "half", "dropping"]}
fails = []
def rel(a, b): return abs(a - b) / max(abs(a), abs(b), 1e-30)
pre = {n: s[n].get("preprocess", {}) for n in s}
print("minibatches per step, measured limits:", pre["exact"].get("minibatches_per_step"))
print("minibatches per step, halved limits:  ", pre["half"].get("minibatches_per_step"))
if pre["exact"].get("max_minibatches") != 1: fails.append("measured limits needed more than one minibatch")
if pre["exact"].get("ids_dropped", 0) != 0: fails.append("measured limits dropped ids")
if not pre["half"].get("max_minibatches", 0) > 1: fails.append("halved limits did not minibatch")
if pre["half"].get("ids_dropped", 0) != 0: fails.append("halved limits dropped ids")
for key, get in [("params_l2", lambda j: j["params_l2"]), ("eval.logloss", lambda j: j["eval"]["logloss"])]:
    a, b = get(s["exact"]), get(s["half"])
    print(f"{key}: one minibatch {a!r}  halved limits {b!r}  rel diff {rel(a, b):.2e}")
    if rel(a, b) > 1e-5: fails.append(f"{key} differs with minibatching")
print("ids dropped with dropping on:", pre["dropping"].get("ids_dropped"), pre["dropping"].get("ids_dropped_per_table"))
if not pre["dropping"].get("ids_dropped", 0) > 0: fails.append("dropping run reports no drops")
log = open(f"{w}/strict.log").read()
errors = [l for l in log.splitlines() if "lemrt_train: error:" in l]
print("strict run:", errors[0] if errors else "(no error line)")
if len(errors) != 2: fails.append(f"expected the error on both ranks, got {len(errors)} lines")
pattern = (r"table '\w+': the partition from SparseCore \d+ to SparseCore \d+ has \d+ "
           r"(ids after per-sample dedup|unique ids), above max_(unique_)?ids_per_partition = \d+")
if not all(re.search(pattern, e) for e in errors): fails.append("error text lacks table/partition/observed/limit")
if "core dumped" in log or "Aborted" in log: fails.append("strict run crashed")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("1 passed, 0 failed")
PY
