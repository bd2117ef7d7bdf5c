#!/usr/bin/env bash
# Faults around checkpoints: a rank SIGKILLed after a checkpoint
# was written, then a resume from it, ends with the same model_checksum as an
# uninterrupted run; so does a resume after a rank crashed in the middle of
# writing the next checkpoint; a full disk and a checkpoint directory that
# cannot be created are an error sentence on every rank, within 30 s, and
# leave the previous checkpoint intact. Each resume must log the restore of
# its step and train only the steps after it (a run that ignored
# --restore_from would reach the same checksum). Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"
source "$LEMRT_SRC/tests/summary_lib.sh"
override='training { steps: 300 log_every: 0 eval_samples: 0 }'

# Checkpoints are pipeline drain points, so the uninterrupted reference saves
# on the same schedule as the killed and the resumed runs.
timeout 120 "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" --override="$override" \
  --checkpoint_dir="$work/refckpt" --checkpoint_every=100 \
  --summary_json="$work/ref.json" > "$work/out" 2>&1 || { echo "FAIL reference run"; tail "$work/out"; exit 1; }
ref=$(checksum_of "$work/ref.json") || exit 1

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
  # The newest published step (100, or 200 if the job got that far before
  # the kill) is the one the resume must restore.
  newest=$(ls -d "$work/ckpt"/step-* 2>/dev/null | tail -n 1); newest=${newest##*step-}
  newest=$((10#${newest:-0}))
  timeout 120 "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" --override="$override" \
    --checkpoint_dir="$work/ckpt" --checkpoint_every=100 --restore_from="$work/ckpt" \
    --summary_json="$work/resumed.json" \
    > "$work/resumed.log" 2>&1
  # (expect_resumed and checksum_of exit their subshell with a FAILED line.)
  if [ $? -eq 0 ] && (expect_resumed "$work/resumed.log" "$work/resumed.json" "$newest") \
     && got=$(checksum_of "$work/resumed.json") && [ "$got" = "$ref" ]; then
    passed=$((passed + 1))
    echo "ok   kill_resume: killed rc=$rc, resumed from the newest checkpoint (step $newest), checksum $ref as uninterrupted"
  else
    failed=$((failed + 1)); echo "FAIL kill_resume: no restore of step $newest, checksums differ or resume failed"
    tail -n 20 "$work/resumed.log"
  fi
else
  wait "$job"
  failed=$((failed + 1)); echo "FAIL kill_resume: no step-100 checkpoint / no rank to kill"; tail -n 20 "$work/out"
fi

# A crash while writing a checkpoint: rank 1 dies in the middle of the
# step-200 save (test hook LEMRT_TEST_CRASH_DURING_CHECKPOINT, see
# runtime/checkpoint/crash_hook.h: after its first table file, with half of
# the next written; tests/fault_checkpoint_crash.sh kills at every other
# point). The job ends non-zero within 30 s of the crash, the partial files
# are all in incomplete-step-00000200 (no step-00000200 exists), the step-100
# checkpoint still verifies, and a resume removes the leftover, picks step
# 100 and ends with the uninterrupted checksum.
start=$SECONDS
# The ranks inherit the variable from mpirun (all local; `-x` would clash
# with scripts/tsan.sh, which sets mca_base_env_list).
LEMRT_TEST_CRASH_DURING_CHECKPOINT=200:1 timeout 120 "${MPIRUN[@]}" -np 2 \
  "$LEMRT_BIN/lemrt_train" --config="$config" --override="$override" \
  --checkpoint_dir="$work/crash" --checkpoint_every=100 > "$work/out" 2>&1
rc=$?
secs=$((SECONDS - start))
partial=$(find "$work/crash/incomplete-step-00000200" -type f 2>/dev/null | wc -l)
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || ! grep -q "killing this rank while it writes" "$work/out" \
   || [ -e "$work/crash/step-00000200" ] || [ "$partial" -eq 0 ]; then
  failed=$((failed + 1)); echo "FAIL crash_while_writing: rc=$rc after ${secs}s, $partial partial files"
  tail -n 20 "$work/out"
elif ! "$LEMRT_BIN/lemrt_ckpt" verify "$work/crash" > "$work/verify" 2>&1 \
     || ! grep -q "step-00000100" "$work/verify"; then
  failed=$((failed + 1)); echo "FAIL crash_while_writing: the step-100 checkpoint does not verify"
  cat "$work/verify"
else
  timeout 120 "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" \
    --override="$override" --checkpoint_dir="$work/crash" --checkpoint_every=100 \
    --restore_from="$work/crash" --summary_json="$work/crash.json" > "$work/crash.log" 2>&1
  if [ $? -eq 0 ] && grep -q "restored .*step-00000100" "$work/crash.log" \
     && (expect_resumed "$work/crash.log" "$work/crash.json" 100) \
     && grep -q "removed '$work/crash/incomplete-step-00000200'" "$work/crash.log" \
     && got=$(checksum_of "$work/crash.json") && [ "$got" = "$ref" ]; then
    passed=$((passed + 1))
    echo "ok   crash_while_writing: killed rc=$rc after ${secs}s, $partial partial file(s), step 100 verifies ($(head -n 1 "$work/verify")), resumed to checksum $ref"
  else
    failed=$((failed + 1)); echo "FAIL crash_while_writing: the resume failed, restored no step 100, kept the leftover or its checksum differs"
    tail -n 20 "$work/crash.log"
  fi
fi

# A disk that fills up during the step-200 save: a tmpfs sized for 1.5
# checkpoints (needs the right to mount, as root in CI; skipped otherwise).
# Every rank ends within 30 s with the same sentence naming the file and "No
# space left on device", the unfinished step is removed (the disk is not
# left fuller), and the step-100 checkpoint still verifies.
step_kb=$(du -sk "$work/refckpt/step-00000100" | cut -f1)
mkdir -p "$work/full"
if mount -t tmpfs -o size=$((step_kb * 3 / 2 + 8))k tmpfs "$work/full" 2>/dev/null; then
  trap 'umount "$work/full" 2>/dev/null; rm -rf "$work"' EXIT
  how="a tmpfs of $((step_kb * 3 / 2 + 8)) KiB (one checkpoint: $step_kb KiB)"
  want="rank [0-9]: checkpoint: cannot write '$work/full/incomplete-step-00000200/.*': No space left on device"
  start=$SECONDS
  timeout "$deadline" "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" --override="$override" \
    --checkpoint_dir="$work/full" --checkpoint_every=100 > "$work/out" 2>&1
  check_same_error "disk_full ($how)" 2 "$want" $? $((SECONDS - start))
  if "$LEMRT_BIN/lemrt_ckpt" verify "$work/full" > "$work/verify" 2>&1 \
     && grep -q "step-00000100" "$work/verify" && [ ! -e "$work/full/step-00000200" ] \
     && [ ! -e "$work/full/incomplete-step-00000200" ]; then
    passed=$((passed + 1)); echo "ok   disk_full_previous_intact: $(head -n 1 "$work/verify"), the failed step removed"
  else
    failed=$((failed + 1)); echo "FAIL disk_full_previous_intact"; cat "$work/verify"; ls "$work/full"
  fi
  umount "$work/full" 2>/dev/null
else
  echo "skip disk_full: cannot mount a tmpfs here"
fi

# A checkpoint directory below a regular file cannot be created (chmod cannot
# make one unwritable: tests run as root).
: > "$work/file"
expect_same_error checkpoint_dir_unwritable 2 "$work/file/ckpt" --config="$config" \
  --override="$override" --checkpoint_dir="$work/file/ckpt" --checkpoint_every=100
finish
