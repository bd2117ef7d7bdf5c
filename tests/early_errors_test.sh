#!/usr/bin/env bash
# Errors on one rank before training starts: MPMD jobs (`mpirun -np 1 prog
# args : -np 1 prog other-args`) in which only one rank has a bad file or
# different arguments. Every rank must stop within the fault tests' bound
# (30 s), non-zero, printing the same sentence that names the failing rank:
# the config file, an --override, the limits file read by the memory plan
# (training and --dry_run), a mode flag given to some ranks only, and the
# same for lemrt_limits; the config for lemrt_predict and lemrt_vocab. Needs
# LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"

# mpmd NAME PROG EXPECTED "ARGS OF RANKS 0..K-1" -- ARGS OF THE LAST RANK...:
# runs K ranks with the first argument list (one word list, split on
# spaces) and one rank with the rest; every rank must print one identical
# "PROG: error:" line containing EXPECTED.
mpmd() {
  local name="$1" prog="$2" want="$3" first_np="$4" first="$5"; shift 5
  local np=$((first_np + 1)) start=$SECONDS lines distinct rc
  # shellcheck disable=SC2086
  timeout "$deadline" "${MPIRUN[@]}" -np "$first_np" "$LEMRT_BIN/$prog" $first : \
    -np 1 "$LEMRT_BIN/$prog" "$@" > "$work/out" 2>&1
  rc=$?
  lines=$(grep -c "$prog: error:" "$work/out")
  distinct=$(grep "$prog: error:" "$work/out" | sort -u | wc -l)
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$lines" -ne "$np" ] || [ "$distinct" -ne 1 ] \
     || ! grep "$prog: error:" "$work/out" | grep -q -- "$want"; then
    echo "FAIL $name: rc=$rc after $((SECONDS - start))s, $lines error lines ($distinct distinct), want '$want'"
    tail -n 30 "$work/out"
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
    echo "ok   $name ($((SECONDS - start))s): $(grep -m1 "$prog: error:" "$work/out")"
  fi
}

"$LEMRT_BIN/lemrt_limits" --config="$config" --batches=2 --out="$work/limits.pbtxt" > /dev/null 2>&1 \
  || { echo "FAIL: lemrt_limits could not write a limits file"; failed=$((failed + 1)); }
cp "$config" "$work/good.pbtxt"
steps='training { steps: 2 eval_samples: 192 }'
limits() { echo "sparse_core { limits_file: \"$1\" } $steps"; }

# The memory plan reads the limits file before any agreement: it hung.
mpmd limits_file_rank1 lemrt_train "rank 1: .*nope.pbtxt" 1 \
  "--config=$work/good.pbtxt --override=sparse_core{limits_file:\"$work/limits.pbtxt\"}" \
  --config="$work/good.pbtxt" --override="$(limits "$work/nope.pbtxt")"
mpmd limits_file_rank2_of_3 lemrt_train "rank 2: .*nope.pbtxt" 2 \
  "--config=$work/good.pbtxt --override=sparse_core{limits_file:\"$work/limits.pbtxt\"}" \
  --config="$work/good.pbtxt" --override="$(limits "$work/nope.pbtxt")"
mpmd dry_run_limits_file_rank1 lemrt_train "rank 1: .*nope.pbtxt" 1 \
  "--dry_run --config=$work/good.pbtxt --override=sparse_core{limits_file:\"$work/limits.pbtxt\"}" \
  --dry_run --config="$work/good.pbtxt" --override="$(limits "$work/nope.pbtxt")"
# The config file or an override fails on one rank (it hung in MPI_Comm_dup).
mpmd config_file_rank1 lemrt_train "rank 1: .*missing.pbtxt" 1 "--config=$work/good.pbtxt" \
  --config="$work/missing.pbtxt"
mpmd override_rank1 lemrt_train "rank 1: --override:1:" 1 "--config=$work/good.pbtxt" \
  --config="$work/good.pbtxt" --override='training { steps: x }'
# A mode flag on one rank only would run different collectives.
mpmd dry_run_rank1_only lemrt_train "--dry_run is set on some ranks only" 1 \
  "--config=$work/good.pbtxt" --config="$work/good.pbtxt" --dry_run
# lemrt_limits: its config on one rank, and --batches (the number of rounds).
mpmd limits_tool_config_rank1 lemrt_limits "rank 1: .*missing.pbtxt" 1 \
  "--config=$work/good.pbtxt --out=$work/l2.pbtxt" --config="$work/missing.pbtxt" \
  --out="$work/l2.pbtxt"
mpmd limits_tool_batches lemrt_limits "--batches differs between ranks (2 to 3)" 1 \
  "--config=$work/good.pbtxt --out=$work/l2.pbtxt --batches=2" --config="$work/good.pbtxt" \
  --out="$work/l2.pbtxt" --batches=3
# lemrt_predict and lemrt_vocab: the config on one rank (the others' is the
# multi-hot example on a tiny generated copy of its data).
python3 "$LEMRT_SRC/scripts/gen_multihot_data.py" --out "$work/mh" --train_rows 64 --eval_rows 16 \
  --gzip > /dev/null
sed "s|data/multihot/|$work/mh/|" "$LEMRT_SRC/examples/configs/multihot_tfrecord.pbtxt" \
  > "$work/multihot.pbtxt"
mpmd predict_config_rank1 lemrt_predict "rank 1: .*missing.pbtxt" 1 \
  "--config=$work/multihot.pbtxt --checkpoint=$work/ck --data=$work/mh/eval.tfrecord.gz --out=$work/p.csv" \
  --config="$work/missing.pbtxt" --checkpoint="$work/ck" --data="$work/none.tsv" \
  --out="$work/p.csv"
mpmd vocab_config_rank1 lemrt_vocab "rank 1: .*missing.pbtxt" 1 \
  "--config=$work/multihot.pbtxt --out_dir=$work/vocab" --config="$work/missing.pbtxt" \
  --out_dir="$work/vocab"
finish
