#!/usr/bin/env bash
# Partition skew with and without id shuffling (docs/preprocessing.md#id-shuffling),
# measured in one run by lemrt_limits (the training batches' partition
# counts, no tables allocated): for the example (examples/configs/
# dlrm_synthetic.pbtxt on 4 ranks, 16 SparseCores) and the Zipf multi-hot
# workload (examples/configs/multihot_large.pbtxt on 1 rank, 4 SparseCores,
# as scripts/multihot_bandwidth.sh runs it), per table (stacking off, so a
# row is one table) and, for the example, per stack as training runs it.
# Prints, per table: skew = ids of the busiest destination SparseCore / the
# mean over SparseCores (the summary's tables[].partition_skew), and the
# largest partition (max_ids: the limit lemrt_limits suggests at headroom 1).
#
#   [LEMRT_BUILD=build] [BATCHES=20] [SEED=0] scripts/id_shuffle_skew.sh
set -euo pipefail
source "$(dirname "$0")/env.sh"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
BATCHES="${BATCHES:-20}"
SEED="${SEED:-0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

limits() {  # limits NAME NP CONFIG OVERRIDE
  mpirun --oversubscribe --bind-to none -np "$2" "$BUILD/bin/lemrt_limits" \
    --config="$LEMRT_ROOT/examples/configs/$3" --override="$4" --batches="$BATCHES" \
    --headroom=1.0 --out="$work/$1.pbtxt" > "$work/$1.txt" 2>&1 \
    || { cat "$work/$1.txt"; exit 1; }
}
# Alternating off / on, so load changes hit both alike (the counts do not
# depend on load; the order only matters for the time each takes).
for stacking in "disable_table_stacking: true" ""; do
  tag=$([ -n "$stacking" ] && echo tables || echo stacks)
  limits "example_${tag}_off" 4 dlrm_synthetic.pbtxt "sparse_core { $stacking }"
  limits "example_${tag}_on" 4 dlrm_synthetic.pbtxt \
    "sparse_core { $stacking shuffle_ids: true id_shuffle_seed: $SEED }"
done
limits multihot_tables_off 1 multihot_large.pbtxt ""
limits multihot_tables_on 1 multihot_large.pbtxt \
  "sparse_core { shuffle_ids: true id_shuffle_seed: $SEED }"

python3 - "$work" "$BATCHES" <<'PY'
import re, sys
w, batches = sys.argv[1], sys.argv[2]
def report(name):  # {row name: (max_ids, skew)}
    rows = {}
    for line in open(f"{w}/{name}.txt"):
        m = re.match(r"^(\S+)\s+(\d+)\s+\S+\s+\S+\s+\d+\s+\S+\s+\S+\s+\d+\s+([\d.]+)x$", line.strip())
        if m: rows[m.group(1)] = (int(m.group(2)), float(m.group(3)))
    return rows
for workload, what in [("example_tables", "example, 4 ranks, per table"),
                       ("example_stacks", "example, 4 ranks, per stack (as trained)"),
                       ("multihot_tables", "multi-hot, 1 rank, per table")]:
    off, on = report(workload + "_off"), report(workload + "_on")
    print(f"\n{what} ({batches} batches): skew off -> on, max_ids off -> on")
    print("| table | skew unshuffled | skew shuffled | max_ids unshuffled | max_ids shuffled |")
    print("|---|---|---|---|---|")
    for name in off:
        print(f"| {name} | {off[name][1]:.2f}x | {on[name][1]:.2f}x | {off[name][0]} | {on[name][0]} |")
    so, sn = [v[1] for v in off.values()], [v[1] for v in on.values()]
    print(f"| all (range) | {min(so):.2f}-{max(so):.2f}x | {min(sn):.2f}-{max(sn):.2f}x | | |")
PY
