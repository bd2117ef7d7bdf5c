#!/usr/bin/env bash
# The collective watchdog: a rank that stops taking part in the collectives
# ends the job within the timeout (here the larger of 2 s and 20 times the
# longest step, plus 1 s for the answers) with a sentence naming the
# collective, the step, the stage and the ranks that did not arrive; slow
# steps that still progress do not.
#  - stuck_rank: rank 1 sleeps forever in step 31 (LEMRT_TEST_STALL,
#    runtime/stall_hook.h); rank 0 names it, busy outside any collective;
#  - frozen_rank: rank 2 of 3 SIGSTOPped mid-run (a stuck disk or network);
#    it cannot answer and is named as such (the other waiting rank may be
#    named too, waiting for rank 2 in another collective: an all-to-all's
#    point-to-point messages let one peer finish it while the other still
#    waits for rank 2's block);
#  - slow_steps: rank 1 takes 0.3 s per step for 10 steps, then 3 s in one
#    step: longer than the 2 s timeout, shorter than 20 times the longest
#    step seen, so the run finishes;
#  - a negative timeout is a config error.
# Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
pass() { passed=$((passed + 1)); echo "ok   $*"; }
watch='watchdog { collective_timeout_s: 2 }'

# --- stuck_rank: rank 1 stops in the SparseCore forward of step 31.
t0=$SECONDS
timeout "$deadline" "${MPIRUN[@]}" -np 2 -x LEMRT_TEST_STALL=1:30:inf "$LEMRT_BIN/lemrt_train" \
  --config="$config" --override="training { steps: 200 log_every: 0 } $watch" \
  > "$work/stuck.log" 2>&1
rc=$?; secs=$((SECONDS - t0))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] \
   && grep "lemrt_train: error: watchdog: rank 0 has waited [0-9]* s (timeout [0-9]* s) in the [a-z() -]* on the SparseCore communicator (its collective #[0-9]*), in step 31, stage sc_forward: rank 1 did not arrive (rank 1: busy for [0-9]* s outside any collective, in step 31, stage sc_forward); aborting the job." "$work/stuck.log" > /dev/null; then
  pass "stuck_rank: rc $rc after ${secs}s: $(grep -m1 -o 'watchdog: rank 0.*' "$work/stuck.log")"
else
  fail "stuck_rank: rc=$rc after ${secs}s"; tail -n 20 "$work/stuck.log"
fi

# --- frozen_rank: rank 2 of 3 is SIGSTOPped after step 20.
t0=$SECONDS
timeout "$deadline" "${MPIRUN[@]}" -np 3 "$LEMRT_BIN/lemrt_train" --config="$config" \
  --override="training { steps: 1000000 log_every: 10 eval_samples: 0 } $watch" \
  > "$work/frozen.log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "step 20/" "$work/frozen.log" && break; sleep 0.1; done
mpirun_pid=$(pgrep -P "$job" | head -n 1)
victim=""
[ -n "$mpirun_pid" ] && victim=$(pgrep -P "$mpirun_pid" -x lemrt_train | sort -n | sed -n 3p)
t0=$SECONDS
[ -n "$victim" ] && kill -STOP "$victim"
wait "$job"; rc=$?; secs=$((SECONDS - t0))
[ -n "$victim" ] && kill -KILL "$victim" 2> /dev/null
if [ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] \
   && grep "lemrt_train: error: watchdog: rank [01] has waited [0-9]* s (timeout [0-9]* s) in the [a-z() -]* on the [A-Za-z]* communicator (its collective #[0-9]*), in step [0-9]*, stage [a-z_ -]*: rank[s]\{0,1\} \([01], \)\{0,1\}2 did not arrive (\(rank [01]: [^;]*; \)\{0,1\}rank 2: no answer within 1 s (stopped, hung or dead)); aborting the job." "$work/frozen.log" > /dev/null; then
  pass "frozen_rank: rc $rc ${secs}s after SIGSTOP: $(grep -m1 -o 'watchdog: rank [01].*' "$work/frozen.log")"
else
  fail "frozen_rank: rc=$rc ${secs}s after SIGSTOP of '$victim'"; tail -n 20 "$work/frozen.log"
fi

# --- slow_steps: slow but progressing, no alarm.
t0=$SECONDS
timeout $((deadline * 2)) "${MPIRUN[@]}" -np 2 -x LEMRT_TEST_STALL=1:5-14:0.3,1:20:3 \
  "$LEMRT_BIN/lemrt_train" --config="$config" \
  --override="training { steps: 30 log_every: 0 eval_samples: 0 } $watch" > "$work/slow.log" 2>&1
rc=$?; secs=$((SECONDS - t0))
if [ "$rc" -eq 0 ] && [ "$secs" -ge 5 ] && ! grep -q "watchdog:" "$work/slow.log" \
   && grep -q "LEMRT_TEST_STALL: this rank sleeps 3 s in steps 21-21" "$work/slow.log"; then
  pass "slow_steps: finished in ${secs}s (one step 3 s, the configured timeout 2 s) without an alarm"
else
  fail "slow_steps: rc=$rc after ${secs}s"; tail -n 20 "$work/slow.log"
fi

expect_same_error negative_timeout 2 \
  "watchdog.collective_timeout_s.*must be a finite number of seconds >= 0" \
  --config="$config" --override="watchdog { collective_timeout_s: -1 }"
finish
