#!/usr/bin/env bash
# End to end through mpirun (issue 6): a 2-rank run of the small DLRM with
# --trace_json, --trace_steps, --metrics_csv and --summary_json, then checks
#  - the trace is valid JSON with one process per chip ("chip R"), the threads
#    Host, SparseCore 0..S-1, TensorCore, Exchange, and exactly one event per
#    stage per traced step (per SparseCore for the SparseCore stages, and the
#    four all-to-alls on Exchange), none outside the traced steps;
#  - the metrics CSV has the documented columns, one row per logged or
#    evaluated step, eval columns exactly on evaluated steps, and its last
#    loss / AUC equal the summary's;
#  - the summary's per-table counters add up to its global id counters;
#  - scripts/plot_run.py writes its PNGs from these files;
#  - a malformed --trace_steps fails with a sentence naming the flag.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"

timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
  --config="$config" --override='training { log_every: 10 eval_every: 25 }' \
  --trace_json="$work/trace.json" --trace_steps=3:6 --metrics_csv="$work/metrics.csv" \
  --summary_json="$work/summary.json" > "$work/run.log" 2>&1 \
  || { cat "$work/run.log"; echo "FAILED: lemrt_train with tracing"; exit 1; }
grep -q "step-time breakdown" "$work/run.log" || { cat "$work/run.log"; echo "FAILED: no breakdown table"; exit 1; }
grep -q "step 50/50 .*ETA" "$work/run.log" || { cat "$work/run.log"; echo "FAILED: no progress line"; exit 1; }

python3 - "$work" <<'PY'
import collections, csv, json, sys
w = sys.argv[1]
fails = []
s = json.load(open(f"{w}/summary.json"))
W, S = s["world_size"], s["sparse_cores_per_chip"]
trace = json.load(open(f"{w}/trace.json"))
ev = trace["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
if procs != {r: f"chip {r}" for r in range(W)}: fails.append(f"processes {procs}")
want_threads = ["Host"] + [f"SparseCore {l}" for l in range(S)] + ["TensorCore", "Exchange"]
for r in range(W):
    names = sorted((e["tid"], e["args"]["name"]) for e in ev
                   if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == r)
    if [n for _, n in names] != want_threads: fails.append(f"chip {r} threads {names}")
tid = {n: i for i, n in enumerate(want_threads)}
count = collections.Counter((e["pid"], e["tid"], e["name"], e["args"]["step"])
                            for e in ev if e["ph"] == "X")
expected = collections.Counter()
for r in range(W):
    for step in range(3, 7):
        expected[(r, tid["Host"], "host", step)] = 1
        expected[(r, tid["TensorCore"], "tc", step)] = 1
        for l in range(S):
            expected[(r, tid[f"SparseCore {l}"], "sc_forward", step)] = 1
            expected[(r, tid[f"SparseCore {l}"], "sc_backward", step)] = 1
        for x in ["alltoall counts", "alltoallv ids", "alltoallv partials", "alltoallv gradients"]:
            expected[(r, tid["Exchange"], x, step)] = 1
if count != expected:
    fails.append(f"trace events differ: missing {dict(expected - count)} extra {dict(count - expected)}")
for e in ev:
    if e["ph"] == "X" and (e["dur"] < 0 or "step" not in e["args"]): fails.append(f"bad event {e}")
    if e["ph"] == "X" and e["tid"] == tid["Exchange"] and e["args"]["bytes_sent"] <= 0:
        fails.append(f"exchange without bytes {e}")
if not any(e["ph"] == "C" for e in ev): fails.append("no counter events")

rows = list(csv.DictReader(open(f"{w}/metrics.csv")))
header = open(f"{w}/metrics.csv").readline().strip().split(",")
want = ["step", "loss", "samples_per_sec", "eval_auc", "eval_logloss", "host_ms", "sc_forward_ms",
        "tc_ms", "sc_backward_ms", "exchange_ms", "step_ms"]
if header != want: fails.append(f"CSV header {header}")
steps = [int(r["step"]) for r in rows]
if steps != [10, 20, 25, 30, 40, 50]: fails.append(f"CSV steps {steps}")
for r in rows:
    evaluated = int(r["step"]) in (25, 50)
    if (r["eval_auc"] != "") != evaluated: fails.append(f"eval columns on row {r}")
    if not float(r["step_ms"]) > 0 or not float(r["samples_per_sec"]) > 0: fails.append(f"row {r}")
last = rows[-1]
if abs(float(last["loss"]) - s["train"]["loss_last"]) > 1e-6: fails.append("CSV loss != summary")
if abs(float(last["eval_auc"]) - s["eval"]["auc"]) > 1e-6: fails.append("CSV AUC != summary")

names = [t["name"] for t in s["tables"]]
if names != ["a", "b", "c"]: fails.append(f"tables {names}")
tot = lambda k: sum(t[k] for t in s["tables"])
if tot("ids") != s["ids"]["total"]: fails.append("per-table ids do not add up to ids.total")
if tot("ids_after_dedup") != s["ids"]["after_dedup"]: fails.append("per-table after_dedup")
if tot("unique_ids") != s["ids"]["unique_per_partition"]: fails.append("per-table unique")
for t in s["tables"]:
    if len(t["partition_ids"]) != W * S or sum(t["partition_ids"]) != t["ids_after_dedup"]:
        fails.append(f"partition_ids of {t['name']}")
    if not t["max_ids_per_partition"] > 0: fails.append(f"max_ids_per_partition of {t['name']}")
stages = {st["name"]: st for st in s["stages"]}
if sorted(stages) != sorted(["host", "sc_forward", "tc", "sc_backward", "exchange", "step"]):
    fails.append(f"stages {sorted(stages)}")
if abs(stages["step"]["share"] - 1) > 1e-9 or not stages["tc"]["mean_ms"] > 0: fails.append("stage stats")
if not 0 <= s["overlap"]["fraction"] < 1: fails.append(f"overlap {s['overlap']}")
print(f"trace: {len(ev)} events; csv: {len(rows)} rows; tables {names}; overlap {s['overlap']['fraction']:.3f}")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
PY

# The plot script, with a Python that has matplotlib (Debian's, when a
# different python3 comes first on PATH).
py=python3
python3 -c "import matplotlib" 2>/dev/null || py=/usr/bin/python3
"$py" "$LEMRT_SRC/scripts/plot_run.py" --metrics "$work/metrics.csv" \
  --summary "$work/summary.json" --out "$work/plots"
for png in loss_auc breakdown partition_load overview; do
  [ -s "$work/plots/$png.png" ] || { echo "FAILED: $png.png not written"; exit 1; }
  head -c 8 "$work/plots/$png.png" | grep -q PNG || { echo "FAILED: $png.png is not a PNG"; exit 1; }
done

# A malformed range is a sentence, not a crash.
if mpirun --oversubscribe --bind-to none -np 1 "$LEMRT_BIN/lemrt_train" --config="$config" \
     --trace_json="$work/t.json" --trace_steps=9:2 > "$work/bad.log" 2>&1; then
  echo "FAILED: --trace_steps=9:2 was accepted"; exit 1
fi
grep -q "error: --trace_steps='9:2': the last step is before the first" "$work/bad.log" \
  || { cat "$work/bad.log"; echo "FAILED: unclear --trace_steps error"; exit 1; }
# Trace bounds without a trace are rejected by the config loader, naming the field.
if mpirun --oversubscribe --bind-to none -np 1 "$LEMRT_BIN/lemrt_train" --config="$config" \
     --override='observability { trace_first_step: 3 }' > "$work/bad2.log" 2>&1; then
  echo "FAILED: trace_first_step without trace_json was accepted"; exit 1
fi
grep -q "observability.trace_first_step: trace steps are set but trace_json is not" "$work/bad2.log" \
  || { cat "$work/bad2.log"; echo "FAILED: unclear observability config error"; exit 1; }
echo "1 passed, 0 failed"
