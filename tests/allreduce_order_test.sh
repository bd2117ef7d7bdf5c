#!/usr/bin/env bash
# End to end through mpirun: the float all-reduces (dense gradients, hot-row
# gradients, the loss) add the ranks in rank order by moving data
# (runtime/comm/mpi_communicator.h), so the model does not depend on which
# MPI_Allreduce algorithm Open MPI picks. small_dlrm (float sums, not
# world_size_independent) on 3 and 4 ranks under Open MPI's default choice
# and under basic linear, recursive doubling and ring, forced through
# coll_tuned's dynamic rules: one model_checksum per world size. (With
# MPI_Allreduce's own sums, 3 ranks under basic linear trained another model
# than under the default.)
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
source "$LEMRT_SRC/tests/summary_lib.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Table a with 50 hot rows, whose replicas' gradients are float all-reduced.
config="$work/small_dlrm_hot.pbtxt"
sed 's/^tables { name: "a" vocab_size: 20000 dim: 16/& hot_rows: 50/' \
  "$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" > "$config"
grep -q 'hot_rows: 50' "$config" || { echo "FAILED: no hot rows set in $config"; exit 1; }
override='training { steps: 30 eval_every: 0 }'
for np in 3 4; do
  first=""
  for algorithm in default 1 3 4; do
    mca=()
    if [ "$algorithm" != default ]; then
      mca=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm "$algorithm")
    fi
    name="np${np}_$algorithm"
    timeout 300 mpirun "${mca[@]}" --oversubscribe --bind-to none -np "$np" \
      "$LEMRT_BIN/lemrt_train" --config="$config" --override="$override" \
      --summary_json="$work/$name.json" > "$work/$name.log" 2>&1 \
      || { tail -n 30 "$work/$name.log"; echo "FAILED: lemrt_train $name"; exit 1; }
    c=$(checksum_of "$work/$name.json") || exit 1
    echo "$np ranks, all-reduce algorithm $algorithm: $c"
    if [ -z "$first" ]; then
      first="$c"
    elif [ "$c" != "$first" ]; then
      echo "FAILED: $np ranks: algorithm $algorithm gave $c, the default $first"
      exit 1
    fi
  done
done
echo "PASSED"
