#!/usr/bin/env bash
# The multi-hot large-embedding workload (examples/configs/
# multihot_large.pbtxt: 26 tables x 10^6 rows, dim 64, 1..70 Zipf ids per
# feature per sample) on one rank: samples/s, and the share of the memory
# bandwidth limit reached, the bandwidth measured in the same run
# (bench_sparsecore's BM_StreamCopy, a STREAM-like 512 MiB memcpy).
#
# The limit: a step must at least read every unique row it touches once
# (lookup) and read and write it once more (SGD update), 3 x unique x dim x 4
# bytes per step (unique = ids.unique_per_partition of the summary, which
# over all partitions counts each (table, row) once). The "per-id" line counts
# lemrt's own traffic instead: every id's row gathered in the lookup plus the
# unique rows updated. The "random rows" line counts the unique rows' three
# touches (lookup read, update read, update write-back) each at the
# random-row gather rate.
#
# Two rates: the whole run's (the summary's samples_per_sec) and the steady
# state's, from the metrics CSV rows after the first WARMUP steps (default 10:
# the first steps fault in every step buffer, hundreds of MB at this size,
# which on a VM costs about a second per step). Per-stage means of the steady
# steps are printed too.
#
# It prints the cost of one id (after per-sample dedup) in each stage, host,
# sc_forward and sc_backward: the steady steps' stage means over the ids per
# step, and the whole run's (the summary's ns_per_id).
#
# It also prints the start-up time (glog timestamps: the first log line to
# the first step, and the table initialisation's share) and the first metrics
# rows' mean step times (LOG_EVERY=1 for every step).
#
# DTYPE=BF16 stores the tables as bf16 (tables.dtype; the byte limits then
# count 2 bytes an element); VOCAB=N gives every table N rows instead of
# 10^6 (a smaller workload for small machines).
#
# DATA=binary trains on the same rows from a binary file instead of the
# synthetic source: lemrt_convert exports the run's STEPS x 512 rows first
# (docs/data.md "The synthetic source as files"; not timed), and the run reads
# them as a user's data is read, so the host stage holds no data generation
# (same model bits as DATA=synthetic, the default).
#
#   LEMRT_BUILD=build-x STEPS=60 [WARMUP=10] [LOG_EVERY=5] [OVERRIDE='sparse_core { ... }'] \
#     [DTYPE=BF16] [VOCAB=200000] [DATA=binary] scripts/multihot_bandwidth.sh
# Needs about 7 GB of memory (FP32, 10^6 rows). Not part of ctest.
set -euo pipefail
source "$(dirname "$0")/env.sh"
lemrt_no_args "$@"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
STEPS="${STEPS:-60}"
WARMUP="${WARMUP:-10}"
OUT="${OUT:-$LEMRT_ROOT/out/multihot}"
DTYPE="${DTYPE:-FP32}"
lemrt_positive_int STEPS "$STEPS"
lemrt_nonneg_int WARMUP "$WARMUP"
lemrt_positive_int LOG_EVERY "${LOG_EVERY:-5}"
[ -z "${VOCAB:-}" ] || lemrt_positive_int VOCAB "$VOCAB"
case "$DTYPE" in FP32|BF16) ;; *) echo "$LEMRT_ME: DTYPE must be FP32 or BF16, got '$DTYPE'" >&2; exit 2 ;; esac
case "${DATA:-synthetic}" in synthetic|binary) ;; *) echo "$LEMRT_ME: DATA must be synthetic or binary, got '$DATA'" >&2; exit 2 ;; esac
mkdir -p "$OUT"
sed -e "s/vocab_size: 1000000 dim: 64 combiner: SUM/vocab_size: ${VOCAB:-1000000} dim: 64 combiner: SUM dtype: $DTYPE/" \
  "$LEMRT_ROOT/examples/configs/multihot_large.pbtxt" > "$OUT/config.pbtxt"
if [ ! -x "$BUILD/bin/lemrt_train" ] || [ ! -x "$BUILD/bin/bench_sparsecore" ] || [ ! -x "$BUILD/bin/lemrt_convert" ]; then
  lemrt_build "$BUILD"
fi
DATA_OVERRIDE=""
case "${DATA:-synthetic}" in
  synthetic) ;;
  binary)
    "$BUILD/bin/lemrt_convert" --config="$OUT/config.pbtxt" --override="training { steps: $STEPS }" \
      --split=train --out="$OUT/train.bin" > "$OUT/convert.txt"
    DATA_OVERRIDE="$(sed -n 's/^override: //p' "$OUT/convert.txt")"
    [ -n "$DATA_OVERRIDE" ] || { cat "$OUT/convert.txt"; exit 1; } ;;
  *) echo "DATA is '$DATA'; use synthetic or binary" >&2; exit 2 ;;
esac
"$BUILD/bin/bench_sparsecore" --benchmark_filter='BM_StreamCopy|BM_RandomRowGather' \
  --benchmark_format=json > "$OUT/stream.json"
START_NS=$(date +%s%N)
lemrt_fg mpirun --oversubscribe --bind-to none -np 1 "$BUILD/bin/lemrt_train" \
  --config="$OUT/config.pbtxt" \
  --override="training { steps: $STEPS log_every: ${LOG_EVERY:-5} } $DATA_OVERRIDE ${OVERRIDE:-}" \
  --summary_json="$OUT/summary.json" \
  --metrics_csv="$OUT/metrics.csv" > "$OUT/train.log" 2>&1 || { cat "$OUT/train.log"; exit 1; }
PROCESS_S=$(( ($(date +%s%N) - START_NS) / 1000000 ))
"$BUILD/bin/bench_sparsecore" --benchmark_filter='BM_StreamCopy|BM_RandomRowGather' \
  --benchmark_format=json > "$OUT/stream_after.json"
"${LEMRT_PYTHON:-python3}" - "$OUT/stream.json" "$OUT/stream_after.json" "$OUT/summary.json" \
  "$OUT/metrics.csv" "$WARMUP" "$OUT/train.log" "$PROCESS_S" "$DTYPE" "${DATA:-synthetic}" <<'PY'
import csv, json, re, sys
benches = [b for f in sys.argv[1:3] for b in json.load(open(f))["benchmarks"]]
bw = max(b["copy_GBps"] for b in benches if b["name"].startswith("BM_StreamCopy")) * 1e9
s = json.load(open(sys.argv[3]))
warmup = int(sys.argv[5])
steps, batch = s["steps"], s["global_batch"]
rows = [r for r in csv.DictReader(open(sys.argv[4])) if int(r["step"]) > warmup]
if not rows:
    sys.exit(f"no metrics rows after the first {warmup} steps: raise STEPS")
mean = lambda key, rows=rows: sum(float(r[key]) for r in rows) / max(1, len(rows))
# A row's stage columns are empty (0) when a step's stages were not all done
# when it was written (pipelining, every-step rows): their means skip them.
staged = [r for r in rows if float(r["sc_forward_ms"]) > 0]
steady = batch / (mean("step_ms") / 1e3)
ids = s["ids"]
dim = 64
eb = 2 if sys.argv[8] == "BF16" else 4  # bytes per stored element
unique, per_id = ids["unique_per_partition"] / steps, ids["after_dedup"] / steps
sps = s["samples_per_sec"]
row = dim * eb
gather = max(b["gather_GBps"] for b in benches
             if b["name"].startswith(f"BM_RandomRowGather/{row}/")) * 1e9
for name, bytes_per_step, rate in (
        (f"unique rows (3 x U x {row} B)", 3 * unique * row, bw),
        (f"per-id (ids + 2 x U) x {row} B", (per_id + 2 * unique) * row, bw),
        (f"random rows (3 x U x {row} B)", 3 * unique * row, gather)):
    limit = rate / (bytes_per_step / batch)
    print(f"{name:30s}: {bytes_per_step / batch / 1e3:8.1f} KB/sample, limit {limit:8.0f} samples/s,"
          f" reached {steady / limit * 100:5.1f}% steady ({sps / limit * 100:4.1f}% whole run)")
threads = s.get("threads", {})
print(f"data: {sys.argv[9]}; threads: {threads.get('tile_threads', 1)} tile,"
      f" {threads.get('host_worker_threads', 0)} host workers, {threads.get('gemm_threads', 1)} GEMM;"
      f" model_checksum {s.get('model_checksum', '?')}")
print(f"samples/s {steady:.0f} steady (steps {warmup + 1}-{steps}), {sps:.0f} whole run;"
      f"  memcpy bandwidth {bw / 1e9:.1f} GB/s (read + write),"
      f" random-row gather {gather / 1e9:.1f} GB/s ({row} B rows read)")
print(f"steady ms per step: step {mean('step_ms'):.1f}, host {mean('host_ms', staged):.1f},"
      f" sc_forward {mean('sc_forward_ms', staged):.1f}, tc {mean('tc_ms', staged):.1f},"
      f" sc_backward {mean('sc_backward_ms', staged):.1f},"
      f" exchange {mean('exchange_ms', staged):.1f} ({len(staged)} rows)")
ns = lambda key: mean(key, staged) * 1e6 / per_id
print(f"steady ns per id: host {ns('host_ms'):.0f}, sc_forward {ns('sc_forward_ms'):.0f},"
      f" sc_backward {ns('sc_backward_ms'):.0f} (whole run, the summary's ns_per_id: "
      + ", ".join(f"{k} {v:.0f}" for k, v in s.get("ns_per_id", {}).items()) + ")")
print(f"ids/step {per_id:.0f} (after per-sample dedup), unique rows/step {unique:.0f};"
      f" wall {s['wall_time_sec']:.1f} s for {steps} steps")
first = [(r["step"], float(r["step_ms"])) for r in csv.DictReader(open(sys.argv[4]))][:4]
print("warm-up, mean step ms up to step: " + ", ".join(f"{k}: {v:.0f}" for k, v in first))
# Start-up: the summary's breakdown (the slowest rank's phases, from its
# process's start to its first step; docs/observability.md "Start-up").
startup = s.get("startup", {})
phases = ["launch", "plan", "data_source", "allocation", "table_fill", "step_buffers", "run_start"]
print(f"start-up {startup.get('total_ms', 0) / 1e3:.1f} s to the first step: "
      + ", ".join(f"{p} {startup.get(p + '_ms', 0) / 1e3:.2f}" for p in phases)
      + f" s (table init {startup.get('table_init_ms', 0) / 1e3:.1f} s,"
      f" {startup.get('table_init_mode', '?')}, {startup.get('threads', 0)} threads);"
      f" process wall {int(sys.argv[7]) / 1e3:.1f} s")
PY
