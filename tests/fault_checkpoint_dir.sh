#!/usr/bin/env bash
# The checkpoint directory over many runs: retention (keep_last, pinned
# steps), restore falling back past damaged checkpoints with a warning naming
# each and why (and lemrt_ckpt verify rejecting the same ones with exit
# status 1 and the reason), a lock that refuses a second job on one directory
# and is taken over from a dead job, resumes that refuse a changed seed or
# combiner unless --allow_config_change, and checkpoint directories that
# cannot take files refused before step 0. Each resume must log the restore
# of its step and train only the steps after it. Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"
source "$LEMRT_SRC/tests/summary_lib.sh"
override='training { steps: 30 log_every: 0 eval_samples: 0 }'
train() {  # train NP OUT args...
  local np="$1" out="$2"; shift 2
  timeout "$deadline" "${MPIRUN[@]}" -np "$np" "$LEMRT_BIN/lemrt_train" --config="$config" \
    --override="$override ${EXTRA:-}" --checkpoint_every=10 "$@" > "$out" 2>&1
}
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
pass() { passed=$((passed + 1)); echo "ok   $*"; }

train 2 "$work/ref.log" --checkpoint_dir="$work/ref" --summary_json="$work/ref.json" \
  || { echo "FAIL reference run"; tail -n 20 "$work/ref.log"; exit 1; }
ref=$(checksum_of "$work/ref.json") || exit 1

# --- Retention: keep_last 2 over steps 10..40, with step 10 pinned (pins.pbtxt,
# what the best-evaluation pin writes): step 20 goes, 10, 30 and 40 stay.
mkdir -p "$work/ret"
printf 'pins { step: 10 reason: "test pin" }\n' > "$work/ret/pins.pbtxt"
EXTRA='training { steps: 40 } checkpoint { keep_last: 2 }' train 2 "$work/ret.log" \
  --checkpoint_dir="$work/ret"
kept=$(cd "$work/ret" && ls -d step-* | tr '\n' ' ')
if [ "$kept" = "step-00000010 step-00000030 step-00000040 " ] \
   && grep -q "checkpoint retention: removed $work/ret/step-00000020 (keep_last 2)" "$work/ret.log"; then
  pass "retention: kept $kept(step 10 pinned), logged the removal of step 20"
else
  fail "retention: kept '$kept'"; grep retention "$work/ret.log"
fi

# --- Fall-back: step 30's table file corrupted, step 20's manifest edited to
# say step 10 (the checksum over its fields catches it). lemrt_ckpt verify
# rejects both (exit status 1, not a crash's, and a sentence naming the
# damaged file and why); a restore passes over both, naming each and why, and
# resumes from step 10 to the uninterrupted checksum.
cp -r "$work/ref" "$work/fb"
rm -f "$work/fb/lemrt.lock"
python3 - "$work/fb/step-00000030/table-001-sc-00003.bin" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[20] ^= 0x01
open(sys.argv[1], "wb").write(b)
PY
sed -i 's/^step: 20$/step: 10/; s/next_step: 20$/next_step: 10/' "$work/fb/step-00000020/manifest.pbtxt"
for s in 30 20; do
  d="$work/fb/step-000000$s"
  if [ "$s" = 30 ]; then
    want="^lemrt_ckpt: error: checkpoint file '$d/table-001-sc-00003.bin' is corrupted: its checksum is [0-9a-f]*, the manifest says [0-9a-f]*"
  else
    want="^lemrt_ckpt: error: checkpoint manifest '$d/manifest.pbtxt' is corrupted: .*(the manifest was damaged or edited)"
  fi
  "$LEMRT_BIN/lemrt_ckpt" verify "$d" > "$work/v$s" 2>&1
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q -- "$want" "$work/v$s"; then
    pass "verify rejects step $s: $(cat "$work/v$s")"
  else
    fail "verify of damaged step $s: rc=$rc (want 1), want '$want'"; cat "$work/v$s"
  fi
done
if train 2 "$work/fb.log" --checkpoint_dir="$work/fb" --restore_from="$work/fb" \
     --summary_json="$work/fb.json" \
   && grep -q "passed over '$work/fb/step-00000030': .*table-001-sc-00003.bin' is corrupted" "$work/fb.log" \
   && grep -q "passed over '$work/fb/step-00000020': .*manifest.pbtxt' is corrupted: .*damaged or edited" "$work/fb.log" \
   && grep -q "restored $work/fb/step-00000010" "$work/fb.log" \
   && (expect_resumed "$work/fb.log" "$work/fb.json" 10) \
   && got=$(checksum_of "$work/fb.json") && [ "$got" = "$ref" ]; then
  pass "fall_back: passed over steps 30 and 20 with a warning each, resumed step 10 to checksum $ref"
else
  fail "fall_back"; grep -E "passed over|restored|error" "$work/fb.log"
fi
# Every checkpoint damaged: one error listing them all, on every rank.
cp -r "$work/ref" "$work/bad"
rm -f "$work/bad/lemrt.lock"
for s in 10 20 30; do rm "$work/bad/step-000000$s/dense.bin"; done
expect_same_error all_damaged 2 "no intact checkpoint in '$work/bad'; tried '$work/bad/step-00000030': .*dense.bin' is missing.*step-00000020.*step-00000010" \
  --config="$config" --override="$override" --restore_from="$work/bad"

# --- Lock: a second job on a running job's directory is refused, naming it;
# once that job is killed, the next one takes the lock over with a warning.
timeout 120 "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" \
  --override='training { steps: 1000000 log_every: 10 eval_samples: 0 }' \
  --checkpoint_dir="$work/lock" > "$work/lock_a.log" 2>&1 &
job=$!
for _ in $(seq 300); do grep -q "step 10/" "$work/lock_a.log" && break; sleep 0.1; done
holder=$(cat "$work/lock/lemrt.lock" 2>/dev/null)
if ! grep -q "step 10/" "$work/lock_a.log"; then
  echo "FAIL lock: the job holding the lock did not reach step 10"; tail -n 20 "$work/lock_a.log"
  failed=$((failed + 1))
fi
expect_same_error lock_refuses_second_job 2 "checkpoint directory '$work/lock' is in use by another job (pid [0-9]* on host" \
  --config="$config" --override="$override" --checkpoint_dir="$work/lock"
mpirun_pid=$(pgrep -P "$job" | head -n 1)
[ -n "$mpirun_pid" ] && kill -KILL $(pgrep -P "$mpirun_pid" -x lemrt_train) 2>/dev/null
wait "$job"
if train 2 "$work/lock_c.log" --checkpoint_dir="$work/lock" \
   && grep -q "taking over the lock of '$work/lock' from a job that ended without releasing it ($holder)" "$work/lock_c.log" \
   && [ ! -s "$work/lock/lemrt.lock" ]; then
  pass "lock_taken_over: from the killed job ($holder), released at exit"
else
  fail "lock_taken_over (holder '$holder')"; tail -n 5 "$work/lock_c.log"
fi

# --- A resume with another seed and combiner is refused, naming both and the
# flag; --allow_config_change accepts it with a warning.
sed 's/seed: 7/seed: 8/; s/dim: 8  combiner: MEAN/dim: 8 combiner: SUM/' "$config" > "$work/changed.pbtxt"
expect_same_error config_change_refused 2 "was saved by a run with another config (training.seed 7 -> 8; table 'b' combiner MEAN -> SUM).*--allow_config_change" \
  --config="$work/changed.pbtxt" --override="$override" --restore_from="$work/ref/step-00000020"
if timeout "$deadline" "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$work/changed.pbtxt" \
     --override="$override" --restore_from="$work/ref/step-00000020" --allow_config_change \
     --summary_json="$work/allow.json" > "$work/allow.log" 2>&1 \
   && grep -q "with a changed config (allow_config_change): training.seed 7 -> 8" "$work/allow.log" \
   && (expect_resumed "$work/allow.log" "$work/allow.json" 20); then
  pass "config_change_allowed: $(grep -m1 'changed config' "$work/allow.log" | sed 's/.*\] //')"
else
  fail "config_change_allowed"; tail -n 5 "$work/allow.log"
fi

# --- Checkpoint directories that cannot take files fail before step 0 (a
# run of 10^6 steps would time out otherwise): a regular file, and a
# read-only file system (when this user may mount one).
long='training { steps: 1000000 log_every: 0 eval_samples: 0 }'
: > "$work/plainfile"
expect_same_error dir_is_a_file 2 "'$work/plainfile' exists and is not a directory" \
  --config="$config" --override="$long" --checkpoint_dir="$work/plainfile"
mkdir -p "$work/ro"
if mount -t tmpfs -o ro,size=64k tmpfs "$work/ro" 2>/dev/null; then
  expect_same_error dir_read_only 2 "checkpoint: cannot create directory '$work/ro/ck': Read-only file system" \
    --config="$config" --override="$long" --checkpoint_dir="$work/ro/ck"
  mount -o remount,rw "$work/ro" && mkdir "$work/ro/ck" && mount -o remount,ro "$work/ro"
  expect_same_error dir_read_only_exists 2 "'$work/ro/ck/lemrt.lock': Read-only file system" \
    --config="$config" --override="$long" --checkpoint_dir="$work/ro/ck"
  umount "$work/ro"
else
  echo "skip dir_read_only: cannot mount a tmpfs here"
fi
finish
