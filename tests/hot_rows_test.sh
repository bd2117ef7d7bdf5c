#!/usr/bin/env bash
# Hot-row replication end to end (docs/preprocessing.md#hot-row-replication;
# runtime/hot_rows/hot_row_replicas.h): small_dlrm with tables a, b, c replicating
# their 32, 16 and 8 most frequent rows (counted over the first 8 batches):
#  1. on 1, 2 and 4 ranks the model equals the run without replication up
#     to summation order (params_l2 and eval logloss within 1e-5 relative),
#     hot ids were looked up in the replicas, and table a's partition skew
#     (busiest destination SparseCore / mean) drops;
#  2. the same config and world size give the same model_checksum twice, and
#     a run resumed from its step-6 checkpoint reaches the model of the run
#     that saved it (the replicas are rebuilt from the restored rows), having
#     logged that restore and trained only steps 7-12 (tests/summary_lib.sh);
#  3. lemrt_limits reports the hot rows and writes them as hot_row_ids; the
#     config listing them trains the counted run's model bit for bit;
#  4. a listed row outside the table is a config error naming file:line;
#  5. the summary's ns_per_id is each stage's time per step over its ids.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
base="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
hot="$work/hot.pbtxt"
python3 - "$base" "$hot" <<'PY'
import sys
s = open(sys.argv[1]).read()
for t, k in [("a", 32), ("b", 16), ("c", 8)]:
    s = s.replace(f'tables {{ name: "{t}"', f'tables {{ hot_rows: {k} name: "{t}"', 1)
open(sys.argv[2], "w").write(s)
PY
steps="training { steps: 12 }"

train() {  # train NP NAME CONFIG ARGS...: must succeed
  local np="$1" name="$2" config="$3"; shift 3
  timeout 300 mpirun --oversubscribe --bind-to none -np "$np" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$steps" --summary_json="$work/$name.json" "$@" \
    > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; echo "FAILED: lemrt_train $name"; exit 1; }
}

for np in 1 2 4; do
  train $np base$np "$base"
  train $np hot$np "$hot"
done
train 2 hot2_again "$hot"
train 2 hot2_ck "$hot" --checkpoint_dir="$work/ck" --checkpoint_every=6
train 2 hot2_resumed "$hot" --restore_from="$work/ck/step-00000006"
# It restored step 6 (from step 0 it would reach the same checksum too).
source "$LEMRT_SRC/tests/summary_lib.sh"
expect_resumed "$work/hot2_resumed.log" "$work/hot2_resumed.json" 6

timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_limits" \
  --config="$hot" --batches=12 --out="$work/limits.pbtxt" --hot_rows_out="$work/rows.txt" \
  > "$work/limits.log" 2>&1 || { cat "$work/limits.log"; echo "FAILED: lemrt_limits"; exit 1; }
grep -q "Hot rows (replicated on every chip" "$work/limits.log" \
  || { cat "$work/limits.log"; echo "FAILED: lemrt_limits names no hot rows"; exit 1; }
timeout 300 mpirun --oversubscribe --bind-to none -np 1 "$LEMRT_BIN/lemrt_limits" \
  --config="$base" --batches=4 --hot_rows=5 --out="$work/limits5.pbtxt" > "$work/limits5.log" 2>&1 \
  || { cat "$work/limits5.log"; echo "FAILED: lemrt_limits --hot_rows=5"; exit 1; }
grep -q "Hot rows (replicated on every chip, not in the partitions above): 15 rows" \
  "$work/limits5.log" || { cat "$work/limits5.log"; echo "FAILED: --hot_rows=5"; exit 1; }
# The listed rows in place of the counts.
python3 - "$base" "$work/rows.txt" "$work/listed.pbtxt" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
rows = dict(re.findall(r"# table '(\w+)'\nhot_row_ids: (\[[^\]]*\])", open(sys.argv[2]).read()))
assert sorted(rows) == ["a", "b", "c"], rows
for t, ids in rows.items():
    s = s.replace(f'tables {{ name: "{t}"', f'tables {{ hot_row_ids: {ids} name: "{t}"', 1)
open(sys.argv[3], "w").write(s)
PY
train 2 listed2 "$work/listed.pbtxt"

python3 - "$work/bad.pbtxt" "$base" <<'PY'
import sys
s = open(sys.argv[2]).read()
open(sys.argv[1], "w").write(s.replace('tables { name: "b"', 'tables { hot_row_ids: [3, 5000]\n name: "b"', 1))
PY
if timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
    --config="$work/bad.pbtxt" > "$work/bad.log" 2>&1; then
  echo "FAILED: a hot row outside its table was accepted"; exit 1
fi
grep -q "bad.pbtxt:4:.*table 'b': hot row 5000 is outside \[0, vocab_size 5000)" "$work/bad.log" \
  || { cat "$work/bad.log"; echo "FAILED: no file:line error for the bad hot row"; exit 1; }

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
def load(n): return json.load(open(f"{w}/{n}.json"))
def rel(a, b): return abs(a - b) / max(abs(a), abs(b), 1e-30)
fails = []
for np in [1, 2, 4]:
    a, b = load(f"base{np}"), load(f"hot{np}")
    p = b["preprocess"]
    skew = {j: {t["name"]: t["partition_skew"] for t in x["tables"]} for j, x in [("base", a), ("hot", b)]}
    print(f"np {np}: hot rows {p.get('hot_rows')}, hot ids {p.get('hot_ids')} of "
          f"{b['ids']['after_dedup']}; skew a/b/c {[round(skew['base'][t], 3) for t in 'abc']} -> "
          f"{[round(skew['hot'][t], 3) for t in 'abc']}")
    if int(p.get("hot_rows", 0)) != 56: fails.append(f"np {np}: hot_rows {p.get('hot_rows')} != 56")
    if not p.get("hot_ids", 0) > 0: fails.append(f"np {np}: no hot ids")
    if np > 1 and not skew["hot"]["a"] < skew["base"]["a"]: fails.append(f"np {np}: skew of a did not drop")
    for key, get in [("params_l2", lambda j: j["params_l2"]), ("eval.logloss", lambda j: j["eval"]["logloss"])]:
        d = rel(get(a), get(b))
        print(f"np {np} {key}: without {get(a)!r} replicated {get(b)!r} rel diff {d:.2e}")
        if d > 1e-5: fails.append(f"np {np}: {key} differs")
# A checkpoint is a drain point of the pipeline: the resumed run matches the
# run with the same checkpoint schedule.
# The summary's cost per id: on 1 rank, each stage's ms per step over the ids per step.
one = load("base1")
for stage in ("host", "sc_forward", "sc_backward"):
    want = one["breakdown_ms"][stage] * 1e6 / (one["ids"]["after_dedup"] / one["steps"])
    got = one.get("ns_per_id", {}).get(stage, 0)
    print(f"ns_per_id.{stage} {got:.1f} (breakdown over ids: {want:.1f})")
    if not got > 0 or rel(got, want) > 1e-9: fails.append(f"ns_per_id.{stage} {got} != {want}")
same = [("hot2", "hot2_again", "the same run twice"), ("hot2_ck", "hot2_resumed", "resumed from step 6"),
        ("hot2", "listed2", "the rows listed as hot_row_ids")]
for ref, name, what in same:
    x, y = load(ref)["model_checksum"], load(name)["model_checksum"]
    print(f"{what}: model_checksum {y} vs {x}")
    if x != y: fails.append(f"{what}: model_checksum differs")
if fails:
    print("FAILED: " + "; ".join(fails)); sys.exit(1)
print("hot-row replication: ok")
PY
