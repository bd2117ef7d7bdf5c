#!/usr/bin/env bash
# Checks at start: config files that are directories, FIFOs or too large are
# refused with a sentence (never read whole or blocked on); a config file's
# field error is reported at the file's line even when --override touches
# the same section; outputs written at the end of a run (--summary_json,
# --trace_json, --metrics_csv) that cannot be written fail before step 0 (the
# runs here have 10^6 steps, so a late check would time out). Every job ends
# non-zero within 30 s with the same sentence on every rank. Two hosts
# sharing a hostname (here: ranks 0, 2 and ranks 1, 3 given one name and
# two host keys through the test hooks of lemrt_train_main.cc) fail before
# the config is even read.
# Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"
long='training { steps: 1000000 log_every: 0 eval_samples: 0 }'

mkdir -p "$work/confdir"
# Ranks 0, 2 and 1, 3: one name, two keys ("hosts").
start=$SECONDS
timeout "$deadline" "${MPIRUN[@]}" -np 4 -x LEMRT_TEST_HOSTNAME=node bash -c \
  'LEMRT_TEST_HOST_KEY=machine-$((OMPI_COMM_WORLD_RANK % 2)) exec "$0" "$@"' \
  "$LEMRT_BIN/lemrt_train" --config="$work/none.pbtxt" > "$work/out" 2>&1
rc=$?
check_same_error shared_hostname 4 "^lemrt_train: error: hostname \"node\" is shared by 2 different hosts (ranks 0, 2 on one, ranks 1, 3 on another): Open MPI takes ranks with one hostname for one host, and its shared-memory transport fails between hosts; give every host its own hostname" \
  "$rc" $((SECONDS - start))

expect_same_error config_is_a_directory 2 "config file '$work/confdir' is a directory, not a regular file" \
  --config="$work/confdir"
mkfifo "$work/fifo"
expect_same_error config_is_a_fifo 2 "config file '$work/fifo' is a FIFO, not a regular file" \
  --config="$work/fifo"
truncate -s 17M "$work/huge.pbtxt"
expect_same_error config_too_large 2 "config file '$work/huge.pbtxt' has 17825792 bytes, more than the 16777216 bytes" \
  --config="$work/huge.pbtxt"

# The file's own error, with an override of the same section.
sed 's/global_batch: 192/global_batch: 190/' "$config" > "$work/bad_batch.pbtxt"
line=$(grep -n "global_batch: 190" "$work/bad_batch.pbtxt" | cut -d: -f1)
expect_same_error file_error_with_override 2 "^lemrt_train: error: $work/bad_batch.pbtxt:$line:3: training.global_batch" \
  --config="$work/bad_batch.pbtxt" --override='training { steps: 5 }'
expect_same_error override_error 2 "^lemrt_train: error: --override:1:21: training.global_batch" \
  --config="$config" --override='training { steps: 5 global_batch: 190 }'

# Outputs.
mkdir -p "$work/out_dir"
expect_same_error summary_dir_missing 2 "rank 0: --summary_json '$work/none/s.json' cannot be written: its directory '$work/none' does not exist" \
  --config="$config" --override="$long" --summary_json="$work/none/s.json"
expect_same_error summary_is_a_directory 2 "rank 0: --summary_json '$work/out_dir' cannot be written: it is a directory" \
  --config="$config" --override="$long" --summary_json="$work/out_dir"
expect_same_error trace_dir_missing 2 "rank 0: --trace_json '$work/none/t.json' cannot be written" \
  --config="$config" --override="$long" --trace_json="$work/none/t.json"
expect_same_error metrics_below_a_file 2 "rank 0: --metrics_csv '$work/fifo/m.csv' cannot be written: '$work/fifo' is not a directory" \
  --config="$config" --override="$long" --metrics_csv="$work/fifo/m.csv"
finish
