#!/usr/bin/env bash
# lemrt's host preprocessing against the public SparseCore library's on the
# same ids: bench_preprocess writes the batch BM_Preprocess/N preprocesses
# (20 features, 4 of 512 SparseCores, N samples per SparseCore, vocabulary
# 1e8: the library's own benchmark's workload; --write_workload), then each
# round runs, one after the other in separate processes,
#
#   lemrt   bench_preprocess's BM_Preprocess/N (COO + per-sample dedup +
#           mod-shard partition + per-partition stats + minibatch fill, one
#           thread, 5 timed iterations after a warm-up);
#   peer    scripts/jax_sc_preprocess.py: jax-tpu-embedding's
#           preprocess_sparse_dense_matmul_input (its C++ core) on the file,
#           one table per feature, limits at the observed maxima, 5 timed
#           calls after a warm-up, on PEER_THREADS of its threads (default 1;
#           its CPU seconds count all of them).
#
# Both rates are ids (before dedup) per CPU second of the process. The table
# gives each round's two rates and their ratio, then the medians over the
# rounds and the median of the per-round ratios. The peer is installed by
# scripts/install_jax_sc.sh (opt-in, from pip; never in CI). Not part of ctest.
#
#   scripts/install_jax_sc.sh && ROUNDS=5 scripts/compare_preprocess.sh
#
# Env: LEMRT_BUILD (build dir, default build), SAMPLES_PER_SC (default 16384),
# ROUNDS (default 3), PEER_THREADS (default 1), OUT (default out/preprocess),
# JAX_SC_PYTHON (default: the environment scripts/install_jax_sc.sh made).
set -euo pipefail
source "$(dirname "$0")/env.sh"
lemrt_no_args "$@"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
PER_SC="${SAMPLES_PER_SC:-16384}"
ROUNDS="${ROUNDS:-3}"
OUT="${OUT:-$LEMRT_ROOT/out/preprocess}"
lemrt_positive_int SAMPLES_PER_SC "$PER_SC"; lemrt_positive_int ROUNDS "$ROUNDS"
lemrt_positive_int PEER_THREADS "${PEER_THREADS:-1}"
mkdir -p "$OUT"
PEER_PY="${JAX_SC_PYTHON:-}"
if [ -z "$PEER_PY" ]; then
  PEER_PY=$("$LEMRT_ROOT/scripts/install_jax_sc.sh" --python) || {
    echo "compare_preprocess: the public SparseCore library is not installed; run scripts/install_jax_sc.sh" >&2
    exit 1
  }
fi
if [ ! -x "$BUILD/bin/bench_preprocess" ]; then lemrt_build "$BUILD"; fi
"$BUILD/bin/bench_preprocess" --write_workload="$OUT/workload.bin" --samples_per_sc="$PER_SC"

for r in $(seq 1 "$ROUNDS"); do
  "$BUILD/bin/bench_preprocess" --benchmark_filter="^BM_Preprocess/$PER_SC/" \
    --benchmark_format=json > "$OUT/lemrt-$r.json"
  SPARSECORE_INPUT_PREPROCESSING_THREADS="${PEER_THREADS:-1}" \
    "$PEER_PY" "$LEMRT_ROOT/scripts/jax_sc_preprocess.py" "$OUT/workload.bin" \
    > "$OUT/peer-$r.json" 2> "$OUT/peer-$r.log" || { cat "$OUT/peer-$r.log" >&2; exit 1; }
done

"${LEMRT_PYTHON:-python3}" - "$OUT" "$ROUNDS" "$PER_SC" "$(uptime | sed 's/.*average: //')" <<'PY'
import json, statistics, sys
out, rounds, per_sc, load = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = []
for r in range(1, rounds + 1):
    lemrt = json.load(open(f"{out}/lemrt-{r}.json"))["benchmarks"][0]
    peer = json.load(open(f"{out}/peer-{r}.json"))
    if abs(lemrt["ids/step"] - peer["ids"]) > 0.5:
        sys.exit(f"round {r}: lemrt counted {lemrt['ids/step']:.0f} ids, the peer {peer['ids']}")
    rows.append((lemrt["ids/cpu_s"] / 1e6, peer["ids_per_cpu_s_median"] / 1e6))
print(f"host preprocessing, BM_Preprocess/{per_sc} ids ({peer['ids']} a batch), "
      f"M ids per CPU second (load after: {load})")
print("round   lemrt    peer   lemrt/peer")
for r, (a, b) in enumerate(rows, 1):
    print(f"{r:5d} {a:7.1f} {b:7.1f} {a / b:8.2f}x")
ratios = [a / b for a, b in rows]
print(f"median {statistics.median(a for a, _ in rows):6.1f} {statistics.median(b for _, b in rows):7.1f} "
      f"{statistics.median(ratios):8.2f}x  (per-round ratios {min(ratios):.2f}-{max(ratios):.2f}x)")
PY
