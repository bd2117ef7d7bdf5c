#!/usr/bin/env bash
# Issue 9's multi-hot large-embedding workload (examples/configs/
# multihot_large.pbtxt: 26 tables x 10^6 rows, dim 64, 1..70 Zipf ids per
# feature per sample) on one rank: samples/s, and the share of the memory
# bandwidth limit reached, the bandwidth measured in the same run
# (bench_sparsecore's BM_StreamCopy, a STREAM-like 512 MiB memcpy).
#
# The limit: a step must at least read every unique row it touches once
# (lookup) and read and write it once more (SGD update), 3 x unique x dim x 4
# bytes per step (unique = ids_unique_per_partition of the summary, which
# over all partitions counts each (table, row) once). The "per-id" line counts
# lemrt's own traffic instead: every id's row gathered in the lookup plus the
# unique rows updated.
#
# Two rates: the whole run's (the summary's samples_per_sec) and the steady
# state's, from the metrics CSV rows after the first WARMUP steps (default 10:
# the first steps fault in every step buffer, hundreds of MB at this size,
# which on a VM costs about a second per step). Per-stage means of the steady
# steps are printed too.
#
#   LEMRT_BUILD=build-x STEPS=60 [WARMUP=10] [OVERRIDE='sparse_core { ... }'] \
#     scripts/multihot_bandwidth.sh
# Needs about 7 GB of memory. Not part of ctest.
set -euo pipefail
source "$(dirname "$0")/env.sh"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
STEPS="${STEPS:-60}"
WARMUP="${WARMUP:-10}"
OUT="${OUT:-$LEMRT_ROOT/out/multihot}"
mkdir -p "$OUT"
if [ ! -x "$BUILD/bin/lemrt_train" ] || [ ! -x "$BUILD/bin/bench_sparsecore" ]; then
  lemrt_build "$BUILD"
fi
"$BUILD/bin/bench_sparsecore" --benchmark_filter=BM_StreamCopy --benchmark_format=json \
  > "$OUT/stream.json"
mpirun --oversubscribe --bind-to none -np 1 "$BUILD/bin/lemrt_train" \
  --config="$LEMRT_ROOT/examples/configs/multihot_large.pbtxt" \
  --override="training { steps: $STEPS log_every: 5 } ${OVERRIDE:-}" --summary_json="$OUT/summary.json" \
  --metrics_csv="$OUT/metrics.csv" > "$OUT/train.log" 2>&1 || { cat "$OUT/train.log"; exit 1; }
"$BUILD/bin/bench_sparsecore" --benchmark_filter=BM_StreamCopy --benchmark_format=json \
  > "$OUT/stream_after.json"
"${LEMRT_PYTHON:-python3}" - "$OUT/stream.json" "$OUT/stream_after.json" "$OUT/summary.json" \
  "$OUT/metrics.csv" "$WARMUP" <<'PY'
import csv, json, sys
bw = max(json.load(open(f))["benchmarks"][0]["copy_GBps"] for f in sys.argv[1:3]) * 1e9
s = json.load(open(sys.argv[3]))
warmup = int(sys.argv[5])
steps, batch = s["steps"], s["global_batch"]
rows = [r for r in csv.DictReader(open(sys.argv[4])) if int(r["step"]) > warmup]
if not rows:
    sys.exit(f"no metrics rows after the first {warmup} steps: raise STEPS")
mean = lambda key: sum(float(r[key]) for r in rows) / len(rows)
steady = batch / (mean("step_ms") / 1e3)
ids = s["ids"]
dim = 64
unique, per_id = ids["unique_per_partition"] / steps, ids["after_dedup"] / steps
sps = s["samples_per_sec"]
for name, bytes_per_step in (("unique rows (3 x U x 256 B)", 3 * unique * dim * 4),
                             ("per-id (ids + 2 x U) x 256 B", (per_id + 2 * unique) * dim * 4)):
    limit = bw / (bytes_per_step / batch)
    print(f"{name:30s}: {bytes_per_step / batch / 1e3:8.1f} KB/sample, limit {limit:8.0f} samples/s,"
          f" reached {steady / limit * 100:5.1f}% steady ({sps / limit * 100:4.1f}% whole run)")
print(f"samples/s {steady:.0f} steady (steps {warmup + 1}-{steps}), {sps:.0f} whole run;"
      f"  memcpy bandwidth {bw / 1e9:.1f} GB/s (read + write)")
print(f"steady ms per step: step {mean('step_ms'):.1f}, host {mean('host_ms'):.1f},"
      f" sc_forward {mean('sc_forward_ms'):.1f}, tc {mean('tc_ms'):.1f},"
      f" sc_backward {mean('sc_backward_ms'):.1f}, exchange {mean('exchange_ms'):.1f}")
print(f"ids/step {per_id:.0f} (after per-sample dedup), unique rows/step {unique:.0f};"
      f" wall {s['wall_time_sec']:.1f} s for {steps} steps")
PY
