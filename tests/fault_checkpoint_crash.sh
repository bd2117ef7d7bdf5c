#!/usr/bin/env bash
# A rank killed at every point of a checkpoint save (test hook
# LEMRT_TEST_CRASH_DURING_CHECKPOINT=STEP:RANK:POINT, runtime/checkpoint/
# crash_hook.h), on rank 0 and on rank 1, for a new step and for a step saved
# again (the re-shard workflow: restore at the last step into the same
# directory, on another world size), with the exchange and with the two-rename
# publishing: each time the job ends non-zero within 30 s, the newest
# published checkpoint verifies (lemrt_ckpt verify, the checks restore makes),
# and the next start removes or repairs what the crash left, with a log line.
# Three of the crashes are resumed to the uninterrupted run's checksum, each
# logging the restore of the step it must pick and training only the steps
# after it; the crashed re-saves log the restore of step 20 first.
# Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"
source "$LEMRT_SRC/tests/summary_lib.sh"
override='training { steps: 20 log_every: 0 eval_samples: 0 }'
train() {  # train NP OUT args...; $EXTRA is merged into the override
  local np="$1" out="$2"; shift 2
  timeout "$deadline" "${MPIRUN[@]}" -np "$np" "$LEMRT_BIN/lemrt_train" --config="$config" \
    --override="$override ${EXTRA:-}" --checkpoint_every=10 "$@" > "$out" 2>&1
}
fail() { failed=$((failed + 1)); echo "FAIL $*"; }

train 2 "$work/ref.log" --checkpoint_dir="$work/ref" --summary_json="$work/ref.json" \
  || { echo "FAIL reference run"; tail -n 20 "$work/ref.log"; exit 1; }
ref=$(checksum_of "$work/ref.json") || exit 1

# crash NAME NP HOOK WANT_STEP LEFTOVER args...: runs with the hook, then
# checks the job failed (after restoring step 20, when args restore), the
# newest checkpoint is WANT_STEP and verifies, and (when LEFTOVER is not -)
# that path exists until the next start removes it.
crash() {
  local name="$1" np="$2" hook="$3" want="$4" leftover="$5"; shift 5
  local dir="$work/$name" start=$SECONDS rc
  [ -d "$dir" ] || mkdir -p "$dir"
  LEMRT_TEST_CRASH_DURING_CHECKPOINT="$hook" train "$np" "$work/$name.log" \
    --checkpoint_dir="$dir" "$@"
  rc=$?
  local secs=$((SECONDS - start))
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || ! grep -q "killing this rank" "$work/$name.log"; then
    fail "$name: rc=$rc after ${secs}s, no crash"; tail -n 15 "$work/$name.log"; return 1
  fi
  if [[ " $* " == *" --restore_from="* ]] && ! grep -q "restored .* (step 20," "$work/$name.log"; then
    fail "$name: no 'restored ... (step 20,' line before the crash"; tail -n 15 "$work/$name.log"; return 1
  fi
  if ! "$LEMRT_BIN/lemrt_ckpt" verify "$dir" > "$work/$name.verify" 2>&1 \
     || ! grep -q "step-$(printf %08d "$want") (step $want)" "$work/$name.verify"; then
    fail "$name: the newest checkpoint is not an intact step $want"; cat "$work/$name.verify"; return 1
  fi
  if [ "$leftover" != - ] && [ ! -e "$dir/$leftover" ]; then
    fail "$name: no $leftover after the crash"; ls "$dir"; return 1
  fi
  passed=$((passed + 1))
  echo "ok   $name: killed ($hook) rc=$rc after ${secs}s; $(head -n 1 "$work/$name.verify")"
}

# resume NAME NP STEP LOG_PATTERN: restarts on the crashed directory
# (cleaning it up first) and must restore STEP (expect_resumed: its restore
# line, only the steps after it trained), end with the reference checksum,
# log LOG_PATTERN and leave no incomplete-, replaced- or discard- directory.
resume() {
  local name="$1" np="$2" step="$3" pattern="$4" dir="$work/$1"
  if ! train "$np" "$work/$name.resume.log" --checkpoint_dir="$dir" --restore_from="$dir" \
         --summary_json="$work/$name.json"; then
    fail "$name resume: failed"; tail -n 15 "$work/$name.resume.log"; return
  fi
  local left got
  left=$(find "$dir" -maxdepth 1 -name 'incomplete-*' -o -maxdepth 1 -name 'replaced-*' \
         -o -maxdepth 1 -name 'discard-*' | wc -l)
  # (expect_resumed and checksum_of exit their subshell with a FAILED line.)
  if ! grep -q -- "$pattern" "$work/$name.resume.log" || [ "$left" -ne 0 ] \
     || ! (expect_resumed "$work/$name.resume.log" "$work/$name.json" "$step") \
     || ! got=$(checksum_of "$work/$name.json") || [ "$got" != "$ref" ]; then
    fail "$name resume: want '$pattern', the restore of step $step, no leftovers ($left), checksum $ref"
    grep -E "checkpoint|restored" "$work/$name.resume.log" | head; return
  fi
  passed=$((passed + 1))
  echo "ok   $name resume: $(grep -m1 -- "$pattern" "$work/$name.resume.log" | sed 's/.*\] //'); restored step $step; checksum $ref"
}

# A new step (20) with step 10 published: nothing of step 20 may count.
crash mid_file_rank1 2 20:1:mid_file 10 incomplete-step-00000020 \
  && resume mid_file_rank1 2 10 "removed '.*incomplete-step-00000020' (an unfinished or failed save"
crash mid_file_rank0 2 20:0:mid_file 10 incomplete-step-00000020
crash tables_written_rank1 2 20:1:tables_written 10 incomplete-step-00000020
crash tables_written_rank0 2 20:0:tables_written 10 incomplete-step-00000020
crash manifest_written 2 20:0:manifest_written 10 incomplete-step-00000020
crash published 2 20:0:published 20 -
# Retention (keep_last 1) killed while removing step 10: step 20 stands.
EXTRA='checkpoint { keep_last: 1 }' crash retiring 2 20:0:retiring 20 discard-step-00000010

# A step saved again: copies of the reference directory (steps 10 and 20 on
# 2 ranks), restored at the last step on 1 rank into the same directory.
for name in resave_manifest_written resave_exchanged resave_renamed_old_away; do
  cp -r "$work/ref" "$work/$name"
  rm -f "$work/$name/lemrt.lock"
done
crash resave_manifest_written 1 20:0:manifest_written 20 incomplete-step-00000020 \
  --restore_from="$work/resave_manifest_written"
saved_on() {  # saved_on NAME NP WHAT: the newest checkpoint of NAME was saved on NP ranks
  if "$LEMRT_BIN/lemrt_ckpt" inspect "$work/$1" | grep -q "^saved on *$2 ranks"; then
    passed=$((passed + 1)); echo "ok   $1: step 20 is the $3 checkpoint ($2 ranks)"
  else
    fail "$1: step 20 is not the $3 checkpoint ($2 ranks)"
  fi
}
saved_on resave_manifest_written 2 old
crash resave_exchanged 1 20:0:exchanged 20 incomplete-step-00000020 \
  --restore_from="$work/resave_exchanged"
saved_on resave_exchanged 1 new
# Two renames (file systems without RENAME_EXCHANGE), killed between them:
# only step 10 is published until the next start renames the old step 20 back.
LEMRT_TEST_CHECKPOINT_RENAME_ONLY=1 crash resave_renamed_old_away 1 20:0:renamed_old_away 10 \
  replaced-step-00000020 --restore_from="$work/resave_renamed_old_away" \
  && resume resave_renamed_old_away 2 20 "renamed '.*replaced-step-00000020' back to"
resume resave_exchanged 2 20 "removed '.*incomplete-step-00000020' (an unfinished or failed save, or the old copy of a step saved again)"
finish
