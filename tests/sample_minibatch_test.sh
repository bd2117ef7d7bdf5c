#!/usr/bin/env bash
# Sample-dimension minibatching end to end (docs/preprocessing.md;
# host/preprocess/sample_split.h): small_dlrm with max_ids_per_partition 8, which the
# hottest rows of table 'a' exceed on their own (no vocabulary-dimension
# split can fit them), on 1 and 2 ranks:
#  1. with minibatching (the default) the run finishes without drops and
#     trains the same model as a run without limits (params_l2 and eval
#     logloss within 1e-5 relative); the summary counts the sample splits;
#  2. with sparse_core.disable_minibatching the same limit stops every rank
#     with the partition error.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
steps="training { steps: 12 }"
limit="sparse_core { max_ids_per_partition: 8 }"

train() {  # train NP NAME OVERRIDE: must succeed
  timeout 300 mpirun --oversubscribe --bind-to none -np "$1" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$steps $3" --summary_json="$work/$2.json" \
    > "$work/$2.log" 2>&1 || { cat "$work/$2.log"; echo "FAILED: lemrt_train $2 on $1 ranks"; exit 1; }
}

for np in 1 2; do
  train $np unlimited$np ""
  train $np limited$np "$limit"
  if timeout 300 mpirun --oversubscribe --bind-to none -np $np "$LEMRT_BIN/lemrt_train" \
      --config="$config" --override="$steps $limit sparse_core { disable_minibatching: true }" \
      > "$work/off$np.log" 2>&1; then
    echo "FAILED: np $np: max_ids_per_partition 8 without minibatching did not fail"; exit 1
  fi
  grep -q "above max_ids_per_partition = 8 (minibatching is disabled)" "$work/off$np.log" \
    || { cat "$work/off$np.log"; echo "FAILED: np $np: no partition error"; exit 1; }
done

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
def rel(a, b): return abs(a - b) / max(abs(a), abs(b), 1e-30)
fails = []
for np in [1, 2]:
    a = json.load(open(f"{w}/unlimited{np}.json"))
    b = json.load(open(f"{w}/limited{np}.json"))
    p = b["preprocess"]
    print(f"np {np}: minibatches per step {p['minibatches_per_step']}, sample minibatches per step "
          f"{p.get('sample_minibatches_per_step')}, sample_split_steps {p.get('sample_split_steps', 0)}, "
          f"max_sample_ranges {p.get('max_sample_ranges')}, ids_dropped {p.get('ids_dropped', 0)}")
    if int(p.get("sample_split_steps", 0)) < 1: fails.append(f"np {np}: no step was split by samples")
    if int(p.get("max_sample_ranges", 1)) < 2: fails.append(f"np {np}: max_sample_ranges < 2")
    if p.get("ids_dropped", 0): fails.append(f"np {np}: ids dropped")
    if sum(p["sample_minibatches_per_step"]) > sum(p["minibatches_per_step"]):
        fails.append(f"np {np}: sample minibatches exceed the minibatches")
    for key, get in [("params_l2", lambda j: j["params_l2"]), ("eval.logloss", lambda j: j["eval"]["logloss"])]:
        d = rel(get(a), get(b))
        print(f"np {np} {key}: unlimited {get(a)!r} sample-minibatched {get(b)!r} rel diff {d:.2e}")
        if d > 1e-5: fails.append(f"np {np}: {key} differs")
if fails:
    print("FAILED: " + "; ".join(fails))
    sys.exit(1)
print("sample-dimension minibatching: ok")
PY
