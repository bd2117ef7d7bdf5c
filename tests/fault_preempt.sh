#!/usr/bin/env bash
# Preemption: a stop signal makes every rank finish the same step, save a
# checkpoint, write the summary and exit non-zero (128 + the signal) with a
# sentence; a second signal exits at once. The stop's checkpoint resumes to
# the checksum of an uninterrupted run that drains at that step; the resume
# must log the restore of the stop's step and train only the steps after it.
#  - SIGTERM to one rank only (the ranks agree on stopping over their loss
#    all-reduce);
#  - SIGTERM to mpirun (Open MPI 4.1 sends SIGCONT, waits
#    odls_base_sigkill_timeout s (30 here), sends SIGTERM, waits again, then
#    SIGKILL; while it waits it reads no output, so this job logs little);
#  - SIGUSR1 to mpirun (forwarded without a SIGKILL);
#  - a signal after the stop's checkpoint was saved says so (not "without a
#    checkpoint") and keeps the stop's exit status;
#  - SIGINT without a checkpoint directory: summary and sentence, no save;
#    the summary's eval holds samples 0 and no metrics (no auc 0.5, no 0s);
#  - SIGTERM then SIGINT: the second one exits at once, without a checkpoint.
# Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"
source "$LEMRT_SRC/tests/summary_lib.sh"
long='training { steps: 1000000 log_every: 10 eval_samples: 0 }'
ready=20
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
pass() { passed=$((passed + 1)); echo "ok   $*"; }
# A failed case's log: the lines that name a crash (a CHECK's sentence, the
# signal Open MPI caught, and its backtrace's frames), which the ranks' later
# output pushes out of the tail, then the tail.
show_log() {
  grep -E -m 40 'Check failed|Process received signal|Signal: |Signal code|Failing at address|\] \[ *[0-9]+\] ' "$1"
  tail -n 15 "$1"
}
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$@"; }

# start NAME MPI_ARGS...: starts a long run in the background ($job) and
# waits for its step-$ready progress line; $ranks lists the rank pids.
start() {
  local name="$1"; shift
  timeout 120 "${MPIRUN[@]}" "$@" "$LEMRT_BIN/lemrt_train" --config="$config" --override="$long" \
    --summary_json="$work/$name.json" "${RUN_ARGS[@]}" > "$work/$name.log" 2>&1 &
  job=$!
  for _ in $(seq 600); do grep -q "step $ready/" "$work/$name.log" && break; sleep 0.1; done
  mpirun_pid=$(pgrep -P "$job" | head -n 1)
  ranks=$(pgrep -P "$mpirun_pid" -x lemrt_train | sort -n | tr '\n' ' ')
}

# ended NAME RC_WANT: waits for the job (30 s at most) and checks its exit
# status and the stop sentence; sets $secs.
ended() {
  local name="$1" want="$2" t0=$SECONDS
  for _ in $(seq 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  wait "$job"; rc=$?
  secs=$((SECONDS - t0))
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "Exit code: *$want\|^rc=$want" "$work/$name.log" <(echo "rc=$rc")
}

# --- SIGTERM to rank 1 only.
RUN_ARGS=(--checkpoint_dir="$work/ck")
start term_one_rank -np 2
kill -TERM $(echo $ranks | awk '{print $2}')
if ended term_one_rank 143 \
   && grep -q "lemrt_train: stopped by SIGTERM after step [0-9]* of 1000000 (every rank finished it); checkpoint saved: $work/ck/step-[0-9]*; resume with --restore_from=$work/ck" "$work/term_one_rank.log" \
   && [ "$(json "$work/term_one_rank.json" 'd["stopped"]["signal"]')" = SIGTERM ]; then
  stop=$(json "$work/term_one_rank.json" 'd["stopped"]["steps_completed"]')
  pass "term_one_rank: every rank stopped after step $stop within ${secs}s, rc 143, summary written"
else
  fail "term_one_rank: rc=$rc"; show_log "$work/term_one_rank.log"; stop=""
fi
# The stop's checkpoint resumes to an uninterrupted run that drains there.
if [ -n "$stop" ]; then
  end=$((stop + 10))
  over="training { steps: $end log_every: 0 eval_samples: 0 }"
  if "$LEMRT_BIN/lemrt_ckpt" verify "$work/ck" > "$work/verify" 2>&1 \
     && timeout 120 "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" --override="$over" \
          --checkpoint_dir="$work/refck" --checkpoint_every="$stop" --summary_json="$work/ref.json" \
          > "$work/ref.log" 2>&1 \
     && timeout 120 "${MPIRUN[@]}" -np 2 "$LEMRT_BIN/lemrt_train" --config="$config" --override="$over" \
          --restore_from="$work/ck" --summary_json="$work/resumed.json" > "$work/resumed.log" 2>&1 \
     && (expect_resumed "$work/resumed.log" "$work/resumed.json" "$stop") \
     && want=$(checksum_of "$work/ref.json") && got=$(checksum_of "$work/resumed.json") \
     && [ "$got" = "$want" ]; then
    pass "term_resume: step $stop verifies and resumes to $end with the uninterrupted checksum $want"
  else
    fail "term_resume"; cat "$work/verify"; tail -n 5 "$work/resumed.log"
  fi
fi

# --- SIGTERM to mpirun. mpirun forwards no output during its waits, so a
# rank that logs more than a pipe holds (64 KiB: ~6,000 steps at log_every
# 10 here) in those 30 s blocks in its log write and never reaches the stop;
# this job logs every 1,000 steps.
RUN_ARGS=(--checkpoint_dir="$work/ck2")
long='training { steps: 1000000 log_every: 1000 eval_samples: 0 }'; ready=1000
start term_mpirun -np 2 --mca odls_base_sigkill_timeout 30
long='training { steps: 1000000 log_every: 10 eval_samples: 0 }'; ready=20
kill -TERM "$mpirun_pid"
wait "$job"; rc=$?
if grep -q "stopped by SIGTERM after step .*checkpoint saved: $work/ck2/step-" "$work/term_mpirun.log" \
   && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && "$LEMRT_BIN/lemrt_ckpt" verify "$work/ck2" > "$work/verify2" 2>&1; then
  pass "term_mpirun: rc=$rc, $(head -n 1 "$work/verify2")"
else
  fail "term_mpirun: rc=$rc"; show_log "$work/term_mpirun.log"
  echo "the checkpoint directory:"; "$LEMRT_BIN/lemrt_ckpt" verify "$work/ck2" 2>&1 | head -n 5
fi

# --- SIGUSR1 to mpirun: forwarded to every rank, without a SIGKILL after it.
RUN_ARGS=(--checkpoint_dir="$work/ck4")
start usr1_mpirun -np 2
kill -USR1 "$mpirun_pid"
if ended usr1_mpirun 138 \
   && grep -q "stopped by SIGUSR1 after step .*checkpoint saved: $work/ck4/step-" "$work/usr1_mpirun.log"; then
  pass "usr1_mpirun: every rank stopped and saved within ${secs}s, rc 138"
else
  fail "usr1_mpirun: rc=$rc"; show_log "$work/usr1_mpirun.log"
fi

# --- A signal after the stop saved its checkpoint (mpirun sends SIGTERM to
# the ranks left when one has exited non-zero, as a stopped rank does) says
# so, and exits with the stop's status. Rank 1 lingers 30 s after its stop
# (test hook LEMRT_TEST_STOPPED_LINGER_S), so the SIGTERM surely comes after.
RUN_ARGS=(--checkpoint_dir="$work/ck5")
start usr1_then_term -np 2 -x LEMRT_TEST_STOPPED_LINGER_S=30
kill -USR1 "$mpirun_pid"
for _ in $(seq 300); do grep -q "stopped by SIGUSR1" "$work/usr1_then_term.log" && break; sleep 0.1; done
kill -TERM $(echo $ranks | awk '{print $2}')
if ended usr1_then_term 138 && [ "$secs" -le 10 ] \
   && grep -q "stopped by SIGUSR1 after step .*checkpoint saved: $work/ck5/step-" "$work/usr1_then_term.log" \
   && grep -q "^lemrt_train: a second stop signal after the stop's checkpoint was saved: exiting now" "$work/usr1_then_term.log" \
   && ! grep -q "without a checkpoint" "$work/usr1_then_term.log" \
   && "$LEMRT_BIN/lemrt_ckpt" verify "$work/ck5" > "$work/verify5" 2>&1; then
  pass "usr1_then_term: the late SIGTERM says the checkpoint was saved; rc 138 within ${secs}s"
else
  fail "usr1_then_term: rc=$rc after ${secs}s"; show_log "$work/usr1_then_term.log"
fi

# --- SIGINT without a checkpoint directory.
RUN_ARGS=()
start int_no_checkpoint -np 2
kill -INT $(echo $ranks | awk '{print $1}')
if ended int_no_checkpoint 130 \
   && grep -q "stopped by SIGINT after step [0-9]* of 1000000 (every rank finished it); no checkpoint saved (no --checkpoint_dir)" "$work/int_no_checkpoint.log" \
   && [ "$(json "$work/int_no_checkpoint.json" 'sorted(d["eval"].items())')" = \
        "[('samples', 0), ('tasks', []), ('teacher_auc', None), ('teacher_logloss', None)]" ]; then
  pass "int_no_checkpoint: rc 130 within ${secs}s, summary written without the final evaluation (eval: samples 0, no metrics)"
else
  fail "int_no_checkpoint: rc=$rc"; show_log "$work/int_no_checkpoint.log"
fi

# --- A second signal exits at once. Both signals may be pending together
# when the rank next runs; the kernel then delivers the lower-numbered one
# (SIGINT) first, so the status is 128 + either of them.
RUN_ARGS=(--checkpoint_dir="$work/ck3")
start second_signal -np 2
victim=$(echo $ranks | awk '{print $2}')
kill -TERM "$victim"; kill -INT "$victim"
if ended second_signal '\(130\|143\)' && [ "$secs" -le 10 ] \
   && grep -q "lemrt_train: a second stop signal: exiting now, without a checkpoint" "$work/second_signal.log" \
   && ! ls "$work/ck3" | grep -q "^step-"; then
  pass "second_signal: rank exited at once (rc $rc), no checkpoint, the job ended within ${secs}s"
else
  fail "second_signal: rc=$rc after ${secs}s"; show_log "$work/second_signal.log"; ls "$work/ck3"
fi
finish
