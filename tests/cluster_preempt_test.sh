#!/usr/bin/env bash
# Preemption of a job on 2 emulated hosts x 2 ranks through scripts/lemrt_run
# (what Kubernetes or a batch script's trap does: SIGTERM to the launcher):
#  - one SIGTERM: every rank finishes the same step and saves it (lemrt's
#    stop sentence, `stopped` in the summary, `lemrt_ckpt verify` passes),
#    lemrt_run exits 143, no process is left on either host, and the run
#    resumed from that checkpoint on the hosts logs the restore of that step,
#    trains only the steps after it and ends with the checksum of an
#    uninterrupted run that drains at the same step;
#  - a second SIGTERM: the job ends at once (within 10 s), without a
#    checkpoint. (The launcher runs in the background here, where bash
#    ignores SIGINT, so the test sends SIGTERM twice.)
# The model here saves in well under a second (CI's budget). By hand, with a
# model whose save takes over 10 s (docs/cluster.md, "Preemption"):
#   LEMRT_PREEMPT_CONFIG=examples/configs/dlrm_synthetic.pbtxt \
#   LEMRT_PREEMPT_OVERRIDE='tables { name: "extra" vocab_size: 2000000 dim: 32
#     optimizer { adagrad {} } } features { name: "extra_id" table: "extra" }' \
#   ctest -R cluster_preempt_test -V
# Needs root and network namespaces (skips with one line otherwise), LEMRT_BIN
# and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/cluster_lib.sh"
source "$LEMRT_SRC/tests/summary_lib.sh"
config="$LEMRT_SRC/${LEMRT_PREEMPT_CONFIG:-tests/testdata/small_dlrm.pbtxt}"
extra="${LEMRT_PREEMPT_OVERRIDE:-}"
long="training { steps: 1000000 log_every: 10 eval_samples: 0 } $extra"
cluster_up 2

# start NAME ARGS...: a long run in the background ($bg: its `timeout`)
# that has reached step $ready (default 30); $job is the launcher (in host 0; its stderr
# reader has the same command line and a higher pid).
start() {
  local name="$1"; shift
  cluster_run -- "$LEMRT_BIN/lemrt_train" --config="$config" --override="$long" \
    --summary_json="$work/$name.json" "$@" > "$work/$name.log" 2>&1 &
  bg=$!
  for _ in $(seq 600); do grep -q "step ${ready:-30}/" "$work/$name.log" && break; sleep 0.1; done
  job=$(pgrep -f "^bash \S*lemrt_run --hostfile $state/hostfile" | head -n 1)
}

# --- One SIGTERM to the launcher.
start term --checkpoint_dir="$work/ck"
t0=$SECONDS
kill -TERM "$job"
wait "$bg"; rc=$?
secs=$((SECONDS - t0))
stop="$(json "$work/term.json" 'd["stopped"]["steps_completed"]' 2>/dev/null)"
left="$(job_processes)"
if [ "$rc" -eq 143 ] && [ -n "$stop" ] && [ -z "$left" ] \
   && grep -q "lemrt_train: stopped by SIGUSR1 after step $stop of 1000000 (every rank finished it); checkpoint saved: $work/ck/step-0*$stop; resume with --restore_from=$work/ck" "$work/term.log" \
   && grep -q "^lemrt_run: every rank stopped after SIGTERM" "$work/term.log" \
   && "$LEMRT_BIN/lemrt_ckpt" verify "$work/ck" > "$work/verify" 2>&1; then
  pass "sigterm: every rank stopped after step $stop and saved it ($(grep -o "checkpoint saved: [^;]*) *$" "$work/term.log" | tail -n 1)), lemrt_run exit 143 ${secs}s after the signal, no process left"
else
  fail "sigterm: rc=$rc after ${secs}s, stopped at '$stop', left: $left"
  grep -v "^I2\|step [0-9]*/" "$work/term.log" | tail -n 20; cat "$work/verify" 2>/dev/null
  stop=""
fi
if [ -n "$stop" ]; then
  over="training { steps: $((stop + 8)) log_every: 0 eval_samples: 0 } $extra"
  timeout 120 mpirun --oversubscribe --bind-to none -np 4 "$LEMRT_BIN/lemrt_train" --config="$config" \
    --override="$over" --checkpoint_dir="$work/refck" --checkpoint_every="$stop" \
    --summary_json="$work/ref.json" > "$work/ref.log" 2>&1
  cluster_run -- "$LEMRT_BIN/lemrt_train" --config="$config" --override="$over" \
    --restore_from="$work/ck" --summary_json="$work/resumed.json" > "$work/resumed.log" 2>&1
  # (expect_resumed and checksum_of exit their subshell with a FAILED line.)
  want="" got=""
  if (expect_resumed "$work/resumed.log" "$work/resumed.json" "$stop") \
     && want=$(checksum_of "$work/ref.json") && got=$(checksum_of "$work/resumed.json") \
     && [ "$got" = "$want" ]; then
    pass "resume: step $stop resumed on the hosts to step $((stop + 8)) with the uninterrupted checksum $want"
  else
    fail "resume: want the restore of step $stop, checksum '$got', uninterrupted '$want'"; tail -n 5 "$work/resumed.log" "$work/ref.log"
  fi
fi

# --- A second signal ends the job at once. Rank 3 stalls 3 s in each step
# from step 11 on (test hook), so the stop cannot complete before it.
export LEMRT_TEST_STALL=3:11-1000000:3
ready=10 start twice --checkpoint_dir="$work/ck2"
unset LEMRT_TEST_STALL
t0=$SECONDS
kill -TERM "$job"; sleep 0.3; kill -TERM "$job"
wait "$bg"; rc=$?
secs=$((SECONDS - t0))
if [ "$rc" -eq 143 ] && [ "$secs" -le 10 ] && [ -z "$(job_processes)" ] \
   && grep -q "^lemrt_run: SIGTERM again: ending the job now" "$work/twice.log" \
   && grep -q "lemrt_train: a second stop signal: exiting now, without a checkpoint" "$work/twice.log" \
   && ! ls "$work/ck2" | grep -q "^step-"; then
  pass "second_signal: the job ended ${secs}s after two SIGTERMs (rc $rc), no checkpoint"
else
  fail "second_signal: rc=$rc after ${secs}s"; grep -v "^I2\|step [0-9]*/" "$work/twice.log" | tail -n 15
  ls "$work/ck2"
fi
finish
