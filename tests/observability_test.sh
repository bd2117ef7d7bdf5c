#!/usr/bin/env bash
# End to end through mpirun: a 2-rank run of the small DLRM with
# --trace_json, --trace_steps, --metrics_csv and --summary_json, then checks
#  - the trace is valid JSON with one process per chip ("chip R"), the threads
#    Host, SparseCore 0..S-1, TensorCore, Exchange, and exactly one event per
#    stage per traced step (per SparseCore for the SparseCore stages, and the
#    four all-to-alls on Exchange), none outside the traced steps;
#  - the metrics CSV has the documented columns, one row per logged or
#    evaluated step, eval columns exactly on evaluated steps, the learning
#    rates of a warm-up schedule, and its last loss / AUC equal the summary's;
#  - the summary's per-table counters add up to its global id counters;
#  - the host queue (host worker threads) shows as a "host queue" counter on
#    every chip, the summary has a host_wait stage, and the host-bound
#    diagnosis appears exactly when the SparseCores waited for the host queue
#    at least 10% of the step (also with maximum_parallel_iterations: 0,
#    where every step's host work runs inline, and the summary's
#    threads.host_worker_threads is 0);
#  - with partition limits configured, every table's limit fields in the
#    summary equal them, and its max unique ids / padded ids are filled;
#  - scripts/plot_run.py writes its PNGs from these files;
#  - the placement (each rank's host, the exchange's bytes per step within
#    and between hosts) is in the start-up log, the report and the summary;
#  - a malformed --trace_steps fails with a sentence naming the flag.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"

# Pipelining and host workers set: left unset, lemrt_train turns both off
# where a rank owns one core.
timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
  --config="$config" \
  --override='training { log_every: 10 eval_every: 25 dense_learning_rate_schedule { warmup_steps: 20 } }
    sparse_core { disable_full_embedding_pipelining: false maximum_parallel_iterations: 2 }' \
  --trace_json="$work/trace.json" --trace_steps=3:6 --metrics_csv="$work/metrics.csv" \
  --summary_json="$work/summary.json" > "$work/run.log" 2>&1 \
  || { cat "$work/run.log"; echo "FAILED: lemrt_train with tracing"; exit 1; }
grep -q "step-time breakdown" "$work/run.log" || { cat "$work/run.log"; echo "FAILED: no breakdown table"; exit 1; }
grep -q "step 50/50 .*ETA" "$work/run.log" || { cat "$work/run.log"; echo "FAILED: no progress line"; exit 1; }
grep -q "placement: 2 ranks on 1 host: $(hostname) (ranks 0-1)" "$work/run.log" \
  || { cat "$work/run.log"; echo "FAILED: no placement line at start-up"; exit 1; }
grep -q "^placement: 2 ranks on 1 host; exchange sent per step: [0-9.]* MB within hosts, 0.000 MB between hosts" "$work/run.log" \
  || { cat "$work/run.log"; echo "FAILED: no placement in the end-of-run report"; exit 1; }

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
            expected[(r, tid[f"SparseCore {l}"], "sc_dedup", step)] = 1
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
for r in range(W):
    hq = [e for e in ev if e["ph"] == "C" and e["name"] == "host queue" and e["pid"] == r]
    if not hq: fails.append(f"chip {r}: no host queue counter")
    if any(not 0 <= e["args"]["steps"] <= 2 for e in hq): fails.append(f"host queue depth {hq}")

rows = list(csv.DictReader(open(f"{w}/metrics.csv")))
header = open(f"{w}/metrics.csv").readline().strip().split(",")
want = ["step", "loss", "samples_per_sec", "eval_auc", "eval_logloss", "host_ms", "sc_forward_ms",
        "tc_ms", "sc_backward_ms", "exchange_ms", "step_ms", "dense_lr", "embedding_lr",
        "eval_ne", "eval_calibration", "eval_gauc"]
if header != want: fails.append(f"CSV header {header}")
steps = [int(r["step"]) for r in rows]
if steps != [10, 20, 25, 30, 40, 50]: fails.append(f"CSV steps {steps}")
for r in rows:
    evaluated = int(r["step"]) in (25, 50)
    if (r["eval_auc"] != "") != evaluated: fails.append(f"eval columns on row {r}")
    if not float(r["step_ms"]) > 0 or not float(r["samples_per_sec"]) > 0: fails.append(f"row {r}")
# The dense rate warms up over 20 steps (the override), the embedding rate is constant.
top = float(rows[-1]["dense_lr"])
for r in rows:
    want_lr = top * min(1.0, int(r["step"]) / 20)
    if abs(float(r["dense_lr"]) - want_lr) > 1e-6 * top: fails.append(f"dense_lr on row {r}")
    if r["embedding_lr"] != rows[0]["embedding_lr"]: fails.append(f"embedding_lr on row {r}")
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
if sorted(stages) != sorted(["host", "sc_forward", "tc", "sc_backward", "exchange", "host_wait", "step"]):
    fails.append(f"stages {sorted(stages)}")
if abs(stages["step"]["share"] - 1) > 1e-9 or not stages["tc"]["mean_ms"] > 0: fails.append("stage stats")
if not 0 <= s["overlap"]["fraction"] < 1: fails.append(f"overlap {s['overlap']}")
# Placement: both ranks on this machine; every exchange byte to the other
# rank stays on the host, and the job's bytes are the ranks' sums.
import socket
p = s["placement"]
want_ranks = [{"rank": r, "host": socket.gethostname(), "local_rank": r, "ranks_on_host": W}
              for r in range(W)]
got_ranks = [{k: x[k] for k in ("rank", "host", "local_rank", "ranks_on_host")} for x in p["ranks"]]
if p["hosts"] != 1 or got_ranks != want_ranks: fails.append(f"placement {p}")
within = [x["exchange_bytes_within_host_per_step"] for x in p["ranks"]]
if not all(b > 0 for b in within) or any(x["exchange_bytes_between_hosts_per_step"] != 0 for x in p["ranks"]):
    fails.append(f"placement bytes {p['ranks']}")
if abs(p["exchange_bytes_within_host_per_step"] - sum(within)) > 1e-6 * sum(within) \
   or p["exchange_bytes_between_hosts_per_step"] != 0:
    fails.append(f"placement totals {p}")
# The traced steps' exchanges sent the bytes to the other rank and, about as
# many, each rank's block to itself (the trace's bytes_sent holds both).
traced_sent = [sum(e["args"]["bytes_sent"] for e in ev if e["ph"] == "X" and e["pid"] == r
                   and e["tid"] == tid["Exchange"]) / 4 for r in range(W)]
if any(not 0.5 * within[r] < traced_sent[r] < 4 * within[r] for r in range(W)):
    fails.append(f"traced bytes per step {traced_sent} vs placement {within}")
print(f"trace: {len(ev)} events; csv: {len(rows)} rows; tables {names}; overlap {s['overlap']['fraction']:.3f}")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
PY

# Host-bound diagnosis against the summary's host_wait stage, with workers
# (the run above) and inline (maximum_parallel_iterations: 0); partition
# limits reported in the summary.
timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
  --config="$config" --override='sparse_core { maximum_parallel_iterations: 0
    max_ids_per_partition: 12 max_unique_ids_per_partition: 10 allow_id_dropping: true }' \
  --summary_json="$work/inline.json" > "$work/inline.log" 2>&1 \
  || { cat "$work/inline.log"; echo "FAILED: lemrt_train inline with limits"; exit 1; }
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
fails = []
for name in ["summary", "inline"]:
    s = json.load(open(f"{w}/{name}.json"))
    stages = {st["name"]: st for st in s["stages"]}
    wait = stages["host_wait"]
    said = any(d.startswith("host-bound") for d in s.get("diagnosis", []))
    if said != (wait["share"] >= 0.10):
        fails.append(f"{name}: host_wait share {wait['share']:.3f} but host-bound said: {said}")
    print(f"{name}: host_wait {wait['mean_ms']:.3f} ms/step ({100 * wait['share']:.1f}%), "
          f"host {stages['host']['mean_ms']:.3f} ms; host-bound: {said}")
# threads.host_worker_threads is the workers that ran: the configured ones
# with a queue, none inline (maximum_parallel_iterations: 0).
for name, depth in [("summary", 2), ("inline", 0)]:
    t = json.load(open(f"{w}/{name}.json"))["threads"]
    want = t["host_worker_threads"] if depth else 0
    if t["maximum_parallel_iterations"] != depth or t["host_worker_threads"] != want \
       or (depth and not t["host_worker_threads"] >= 1):
        fails.append(f"{name}: threads {t}: want depth {depth} and {'>= 1' if depth else 0} host workers")
s = json.load(open(f"{w}/inline.json"))
for t in s["tables"]:
    if t.get("max_ids_per_partition_limit") != 12 or t.get("max_unique_ids_per_partition_limit") != 10:
        fails.append(f"table {t['name']}: limits {t.get('max_ids_per_partition_limit')} / "
                     f"{t.get('max_unique_ids_per_partition_limit')}, configured 12 / 10")
    mu = t.get("max_unique_ids_per_partition")
    if not isinstance(mu, (int, float)) or not 0 < mu <= t["max_ids_per_partition"]:
        fails.append(f"table {t['name']}: max_unique_ids_per_partition {mu}")
    dropped = s["preprocess"].get("ids_dropped_per_table", {}).get(t["name"], 0)
    if not isinstance(t.get("padded_ids"), (int, float)) or t["padded_ids"] < t["ids_after_dedup"] - dropped:
        fails.append(f"table {t['name']}: padded_ids {t.get('padded_ids')}")
s = json.load(open(f"{w}/summary.json"))
if any(t.get("max_ids_per_partition_limit") is not None for t in s["tables"]):
    fails.append("limits reported for a run without limits")
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
