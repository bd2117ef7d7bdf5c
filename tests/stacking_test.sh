#!/usr/bin/env bash
# Table stacking end to end (docs/preprocessing.md; layout/stacking.h), on a
# config whose tables stack (a+b+c, d+e):
#  1. stacked (the default) and sparse_core.disable_table_stacking train the
#     same model on 1 and 3 ranks (params_l2 and eval logloss within 1e-5
#     relative); the summary's stacking object holds the plan; rank 0 logs
#     the plan once and no stack-size warning (automatic stacks hold every
#     table they can: nothing to change);
#  2. checkpoints are per original table and layout-free: saved stacked on 2
#     ranks and restored unstacked on 3 ranks (and saved unstacked on 1 rank,
#     restored stacked on 2 ranks with another rotation) give the saved
#     model_checksum, each logging the restore of step 16 and training no
#     further step (tests/summary_lib.sh);
#  3. lemrt_limits measures per stacked table (report rows per stack, every
#     member in the file): fed back at headroom 1.0 the run has one minibatch
#     per step and no drops; halved, more minibatches and the same model.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/stacked_dlrm.pbtxt"
off="sparse_core { disable_table_stacking: true }"

train() {  # train NP NAME OVERRIDE ARGS...: must succeed
  local np="$1" name="$2" override="$3"; shift 3
  timeout 300 mpirun --oversubscribe --bind-to none -np "$np" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$override" --summary_json="$work/$name.json" "$@" \
    > "$work/$name.log" 2>&1 \
    || { cat "$work/$name.log"; echo "FAILED: lemrt_train $name on $np ranks"; exit 1; }
}

for np in 1 3; do
  train $np stacked$np ""
  train $np unstacked$np "$off"
done
train 2 save_stacked "" --checkpoint_dir="$work/ck_stacked"
train 3 restore_unstacked "$off" --restore_from="$work/ck_stacked"
train 1 save_unstacked "$off" --checkpoint_dir="$work/ck_unstacked"
train 2 restore_stacked "sparse_core { table_stacking_rotation: 3 }" \
  --restore_from="$work/ck_unstacked"
# Each restored the final checkpoint (a run that trained from step 0 instead
# would reach the same checksum: training is deterministic).
source "$LEMRT_SRC/tests/summary_lib.sh"
for name in restore_unstacked restore_stacked; do expect_resumed "$work/$name.log" "$work/$name.json" 16; done

timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_limits" \
  --config="$config" --batches=16 --headroom=1.0 --out="$work/limits.pbtxt" \
  > "$work/limits.log" 2>&1 || { cat "$work/limits.log"; echo "FAILED: lemrt_limits"; exit 1; }
cat "$work/limits.log"
awk '/max_(unique_)?ids_per_partition:/ { v = int($2 / 2); if (v < 1) v = 1; $2 = v } { print }' \
  "$work/limits.pbtxt" > "$work/limits_2.pbtxt"
train 2 exact "sparse_core { limits_file: '$work/limits.pbtxt' }"
train 2 half "sparse_core { limits_file: '$work/limits_2.pbtxt' }"

python3 - "$work" <<'PY'
import json, re, sys
w = sys.argv[1]
names = ["stacked1", "unstacked1", "stacked3", "unstacked3", "save_stacked",
         "restore_unstacked", "save_unstacked", "restore_stacked", "exact", "half"]
s = {n: json.load(open(f"{w}/{n}.json")) for n in names}
fails = []
def rel(a, b): return abs(a - b) / max(abs(a), abs(b), 1e-30)

plan = s["stacked3"]["stacking"]
stacks = [(x["name"], x["tables"]) for x in plan["stacks"]]
print("plan on 3 ranks:", stacks, "rotation", plan["rotation"],
      "shifts", [x.get("sc_shifts") for x in plan["stacks"]])
if stacks != [("a+b+c", ["a", "b", "c"]), ("d+e", ["d", "e"])]: fails.append("unexpected stacks")
if plan["stacks"][0].get("sc_shifts") != [0, 4, 8]: fails.append("rotation 4 not applied (N = 12)")
if plan["stacks"][0].get("row_offsets") != [0, 20004, 25008]: fails.append("row offsets")
off = s["unstacked3"]["stacking"]
if off.get("enabled", False) or len(off["stacks"]) != 5: fails.append("disabled plan is not 5 stacks")
for np in ["1", "3"]:
    a, b = s["stacked" + np], s["unstacked" + np]
    for key, get in [("params_l2", lambda j: j["params_l2"]), ("eval.logloss", lambda j: j["eval"]["logloss"])]:
        d = rel(get(a), get(b))
        print(f"np {np} {key}: stacked {get(a)!r} unstacked {get(b)!r} rel diff {d:.2e}")
        if d > 1e-5: fails.append(f"np {np}: {key} differs with stacking")
    per_table = sorted(t["name"] for t in a.get("tables", []))
    if per_table and per_table != ["a", "b", "c", "d", "e"]:
        fails.append(f"per-table counters are not per original table: {per_table}")

for saved, restored in [("save_stacked", "restore_unstacked"), ("save_unstacked", "restore_stacked")]:
    a, b = s[saved]["model_checksum"], s[restored]["model_checksum"]
    print(f"checkpoint {saved} ({s[saved]['world_size']} ranks) -> {restored} "
          f"({s[restored]['world_size']} ranks): {a} -> {b}")
    if a != b: fails.append(f"{restored} does not restore the saved model")

log = open(f"{w}/stacked3.log").read()
plan_lines = [l for l in log.splitlines() if "table stacking on:" in l]
warn_lines = [l for l in log.splitlines() if "table stacking: " in l]
print("log:", plan_lines[:1], warn_lines[:1])
if len(plan_lines) != 1: fails.append(f"plan logged {len(plan_lines)} times")
if warn_lines: fails.append(f"size warning logged though nothing should change: {warn_lines}")
if "stack 'a+b+c': 3 tables" not in log: fails.append("plan log lacks the stack line")
if "not implemented" in log: fails.append("the pending-knob warning is still there")

limits = open(f"{w}/limits.log").read()
if not re.search(r"^a\+b\+c\s+\d+", limits, re.M) or not re.search(r"^d\+e\s+\d+", limits, re.M):
    fails.append("lemrt_limits report is not per stack")
entries = re.findall(r'table: "(\w+)"', open(f"{w}/limits.pbtxt").read())
if sorted(entries) != ["a", "b", "c", "d", "e"]: fails.append(f"limits file tables {entries}")
pre = {n: s[n].get("preprocess", {}) for n in ["exact", "half"]}
print("minibatches per step, measured limits:", pre["exact"].get("minibatches_per_step"))
print("minibatches per step, halved limits:  ", pre["half"].get("minibatches_per_step"))
if pre["exact"].get("max_minibatches") != 1: fails.append("measured stack limits needed minibatches")
if pre["exact"].get("ids_dropped", 0) != 0 or pre["half"].get("ids_dropped", 0) != 0:
    fails.append("ids dropped")
if not pre["half"].get("max_minibatches", 0) > 1: fails.append("halved stack limits did not minibatch")
d = rel(s["exact"]["params_l2"], s["half"]["params_l2"])
print(f"params_l2 one minibatch vs halved limits: rel diff {d:.2e}")
if d > 1e-5: fails.append("minibatching changed the model")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("stacking_test: all checks passed")
PY
