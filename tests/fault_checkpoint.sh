#!/usr/bin/env bash
# Faults around checkpoints (issue 8): a rank SIGKILLed after a checkpoint
# was written, then a resume from it, ends with the same model_checksum as an
# uninterrupted run; a checkpoint directory that cannot be created is an error
# sentence on every rank, within 30 s. Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"
override='training { steps: 300 log_every: 0 eval_samples: 0 }'
checksum() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model_checksum"])' "$1"; }

# Checkpoints are pipeline drain points, so the uninterrupted reference saves
# on the same schedule as the killed and the resumed runs.
timeout 120 "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" --override="$override" \
  --checkpoint_dir="$work/refckpt" --checkpoint_every=100 \
  --summary_json="$work/ref.json" > "$work/out" 2>&1 || { echo "FAIL reference run"; tail "$work/out"; exit 1; }

# Kill rank 1 once the step-100 checkpoint is complete (its manifest is last).
timeout 120 "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" --override="$override" \
  --checkpoint_dir="$work/ckpt" --checkpoint_every=100 > "$work/out" 2>&1 &
job=$!
for _ in $(seq 600); do
  [ -f "$work/ckpt/step-00000100/manifest.pbtxt" ] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
mpirun_pid=$(pgrep -P "$job" | head -n 1)
victim=$(pgrep -P "$mpirun_pid" -x lemrt_train | sort -n | sed -n 2p)
if [ -n "$victim" ] && kill -KILL "$victim"; then
  wait "$job"; rc=$?
  if [ "$rc" -eq 0 ]; then echo "FAIL kill_resume: the killed job exited 0"; failed=$((failed + 1)); fi
  timeout 120 "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" --override="$override" \
    --checkpoint_dir="$work/ckpt" --checkpoint_every=100 --restore_from="$work/ckpt" \
    --summary_json="$work/resumed.json" \
    > "$work/out" 2>&1
  if [ $? -eq 0 ] && [ "$(checksum "$work/resumed.json")" = "$(checksum "$work/ref.json")" ]; then
    passed=$((passed + 1))
    echo "ok   kill_resume: killed rc=$rc, resumed from the newest checkpoint, checksum $(checksum "$work/ref.json") as uninterrupted"
  else
    failed=$((failed + 1)); echo "FAIL kill_resume: checksums differ or resume failed"; tail -n 20 "$work/out"
  fi
else
  wait "$job"
  failed=$((failed + 1)); echo "FAIL kill_resume: no step-100 checkpoint / no rank to kill"; tail -n 20 "$work/out"
fi

# A checkpoint directory below a regular file cannot be created (chmod cannot
# make one unwritable: tests run as root).
: > "$work/file"
expect_same_error checkpoint_dir_unwritable 2 "$work/file/ckpt" --config="$config" \
  --override="$override" --checkpoint_dir="$work/file/ckpt" --checkpoint_every=100
finish
