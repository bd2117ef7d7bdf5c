#!/usr/bin/env bash
# Partition skew under the two placement levers of docs/preprocessing.md, id
# shuffling and hot-row replication, measured in one run by lemrt_limits
# (the training batches' partition counts, no tables allocated): for the
# example (examples/configs/dlrm_synthetic.pbtxt on 4 ranks, 16 SparseCores)
# and the Zipf multi-hot workload (examples/configs/multihot_large.pbtxt on 1
# rank, 4 SparseCores, as scripts/multihot_bandwidth.sh runs it), per table
# (stacking off, so a row is one table) and, for the example, per stack as
# training runs it. Variants: plain mod sharding, shuffled ids (SEED), and
# each table's HOT_ROWS most frequent rows replicated (lemrt_limits
# --hot_rows; their ids leave the partitions).
# Prints, per table and variant: skew = ids of the busiest destination
# SparseCore / the mean over SparseCores (the summary's
# tables[].partition_skew), the largest partition (max_ids: the limit
# lemrt_limits suggests at headroom 1), and the hot rows' share of the ids.
#
#   [LEMRT_BUILD=build] [BATCHES=20] [SEED=0] [HOT_ROWS=64] scripts/partition_skew.sh
set -euo pipefail
source "$(dirname "$0")/env.sh"
lemrt_no_args "$@"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
BATCHES="${BATCHES:-20}"
SEED="${SEED:-0}"
HOT_ROWS="${HOT_ROWS:-64}"
lemrt_positive_int BATCHES "$BATCHES"
lemrt_nonneg_int SEED "$SEED"
lemrt_positive_int HOT_ROWS "$HOT_ROWS"
[ -x "$BUILD/bin/lemrt_limits" ] || { echo "$LEMRT_ME: no $BUILD/bin/lemrt_limits (build first, or set LEMRT_BUILD)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

limits() {  # limits NAME NP CONFIG OVERRIDE [FLAGS...]
  local name="$1" np="$2" config="$3" override="$4"; shift 4
  lemrt_fg mpirun --oversubscribe --bind-to none -np "$np" "$BUILD/bin/lemrt_limits" \
    --config="$LEMRT_ROOT/examples/configs/$config" --override="$override" --batches="$BATCHES" \
    --headroom=1.0 --out="$work/$name.pbtxt" "$@" > "$work/$name.txt" 2>&1 \
    || { cat "$work/$name.txt"; exit 1; }
}
shuffled="shuffle_ids: true id_shuffle_seed: $SEED"
for stacking in "disable_table_stacking: true" ""; do
  tag=$([ -n "$stacking" ] && echo tables || echo stacks)
  limits "example_${tag}_plain" 4 dlrm_synthetic.pbtxt "sparse_core { $stacking }"
  limits "example_${tag}_shuffled" 4 dlrm_synthetic.pbtxt "sparse_core { $stacking $shuffled }"
  limits "example_${tag}_hot" 4 dlrm_synthetic.pbtxt "sparse_core { $stacking }" \
    --hot_rows="$HOT_ROWS"
done
limits multihot_tables_plain 1 multihot_large.pbtxt ""
limits multihot_tables_shuffled 1 multihot_large.pbtxt "sparse_core { $shuffled }"
limits multihot_tables_hot 1 multihot_large.pbtxt "" --hot_rows="$HOT_ROWS"

python3 - "$work" "$BATCHES" "$HOT_ROWS" <<'PY'
import re, sys
w, batches, hot_rows = sys.argv[1], sys.argv[2], sys.argv[3]
def report(name):  # {row name: (max_ids, skew)}, hot share line
    rows, share = {}, ""
    for line in open(f"{w}/{name}.txt"):
        m = re.match(r"^(\S+)\s+(\d+)\s+\S+\s+\S+\s+\d+\s+\S+\s+\S+\s+\d+\s+([\d.]+)x$", line.strip())
        if m: rows[m.group(1)] = (int(m.group(2)), float(m.group(3)))
        m = re.search(r"Hot rows .*: (\d+) rows, (\d+) of (\d+) ids \(([\d.]+)%\)", line)
        if m: share = f"{m.group(1)} hot rows hold {m.group(4)}% of the ids"
    return rows, share
variants = ["plain", "shuffled", "hot"]
for workload, what in [("example_tables", "example, 4 ranks, per table"),
                       ("example_stacks", "example, 4 ranks, per stack (as trained)"),
                       ("multihot_tables", "multi-hot, 1 rank, per table")]:
    r = {v: report(f"{workload}_{v}") for v in variants}
    print(f"\n{what} ({batches} batches; hot: {hot_rows} rows per table, {r['hot'][1]})")
    print("| table | skew plain | skew shuffled | skew hot rows | max_ids plain | shuffled | hot rows |")
    print("|---|---|---|---|---|---|---|")
    for name in r["plain"][0]:
        s = [r[v][0][name] for v in variants]
        print(f"| {name} | " + " | ".join(f"{x[1]:.2f}x" for x in s) + " | "
              + " | ".join(str(x[0]) for x in s) + " |")
    ranges = []
    for v in variants:
        k = [x[1] for x in r[v][0].values()]
        ranges.append(f"{min(k):.2f}-{max(k):.2f}x")
    print("| all (range) | " + " | ".join(ranges) + " | | | |")
PY
