#!/usr/bin/env bash
# The collective watchdog: a rank that stops taking part in the collectives
# ends the job within the timeout (here the larger of 2 s and 20 times the
# longest step, plus 1 s for the answers) with a sentence naming the
# collective, the step, the stage and the ranks that did not arrive; slow
# steps that still progress do not.
#  - stuck_rank: rank 1 sleeps forever in step 31 (LEMRT_TEST_STALL,
#    runtime/comm/stall_hook.h); rank 0 names it, busy outside any collective;
#  - frozen_rank: rank 2 of 3 SIGSTOPped mid-run (a stuck disk or network);
#    it cannot answer and is named as such (the other waiting rank may be
#    named too, waiting for rank 2 in another collective: an all-to-all's
#    point-to-point messages let one peer finish it while the other still
#    waits for rank 2's block);
#  - slow_steps: rank 1 takes 0.3 s per step for 10 steps, then 3 s in one
#    step: longer than the 2 s timeout, shorter than 20 times the longest
#    step seen, so the run finishes;
#  - frozen_host: ranks 0-1 on "host" node-0 and 2-3 on node-1 (test hook
#    LEMRT_TEST_HOSTNAME); both ranks of node-1 SIGSTOPped, as a host cut
#    off by its network looks from the other side: ranks 0 and 1 reach no
#    rank on another host, say so naming the ranks and their host, and end
#    themselves (no MPI_Abort, which may block without a network), so the
#    job ends within the timeout the sentence names plus the answer wait.
#    The first watchdog sentence is theirs; mpirun's SIGCONT as it ends the
#    job may let the stopped ranks print theirs after it;
#  - frozen_remote_rank: 3 ranks on 3 "hosts", rank 2 SIGSTOPped: the others
#    still reach each other, and name rank 2 with its host (first; rank 2,
#    continued by mpirun as it ends the job, may then find itself cut off);
#  - a negative timeout is a config error.
# Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
pass() { passed=$((passed + 1)); echo "ok   $*"; }
watch='watchdog { collective_timeout_s: 2 }'
host=$(hostname)
# Runs lemrt_train with LEMRT_TEST_HOSTNAME=node-<rank / RANKS_PER_HOST>
# ("hosts" of one machine; RANKS_PER_HOST in the environment).
on_hosts=(bash -c 'LEMRT_TEST_HOSTNAME=node-$((OMPI_COMM_WORLD_RANK / RANKS_PER_HOST)) exec "$0" "$@"')

# within_timeout LOG SECS: the job ended within the timeout its watchdog
# sentence names (which grows with the longest step: 4 ranks on a loaded
# 2-core machine may take 0.5-1 s a step) plus the 1 s answer wait and 5 s
# for the ranks' exit.
within_timeout() {
  local t; t=$(grep -m1 -o "watchdog: rank [0-9]* .*(timeout [0-9]* s)" "$1" | grep -o "timeout [0-9]*" | cut -d' ' -f2)
  [ -n "$t" ] && [ "$2" -le $((t + 6)) ]
}

# stop_ranks NAME JOB_PID RANK...: after step 20 of the job whose log is
# $work/NAME.log, SIGSTOPs the lemrt_train processes of the given ranks
# (ordered by pid, which is rank order as mpirun starts them); sets
# `victims`.
stop_ranks() {
  local name="$1" job="$2"; shift 2
  for _ in $(seq 600); do grep -q "step 20/" "$work/$name.log" && break; sleep 0.1; done
  local mpirun_pid; mpirun_pid=$(pgrep -P "$job" | head -n 1)
  victims=""
  [ -n "$mpirun_pid" ] || return
  local pids; pids=$(pgrep -P "$mpirun_pid" -x lemrt_train | sort -n)
  for r in "$@"; do victims="$victims $(echo "$pids" | sed -n "$((r + 1))p")"; done
  kill -STOP $victims
}

# --- stuck_rank: rank 1 stops in the SparseCore forward of step 31.
t0=$SECONDS
timeout "$deadline" "${MPIRUN[@]}" -np 2 -x LEMRT_TEST_STALL=1:30:inf "$LEMRT_BIN/lemrt_train" \
  --config="$config" --override="training { steps: 200 log_every: 0 } $watch" \
  > "$work/stuck.log" 2>&1
rc=$?; secs=$((SECONDS - t0))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] \
   && grep "lemrt_train: error: watchdog: rank 0 on host $host has waited [0-9]* s (timeout [0-9]* s) in the [a-z() -]* on the SparseCore communicator (its collective #[0-9]*), in step 31, stage sc_forward: rank 1 on host $host did not arrive (rank 1: busy for [0-9]* s outside any collective, in step 31, stage sc_forward); aborting the job." "$work/stuck.log" > /dev/null; then
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
   && grep "lemrt_train: error: watchdog: rank [01] on host $host has waited [0-9]* s (timeout [0-9]* s) in the [a-z() -]* on the [A-Za-z]* communicator (its collective #[0-9]*), in step [0-9]*, stage [a-z_ -]*: rank[s]\{0,1\} \([01], \)\{0,1\}2 on host $host did not arrive (\(rank [01]: [^;]*; \)\{0,1\}rank 2: no answer within 1 s (stopped, hung or dead)); aborting the job." "$work/frozen.log" > /dev/null; then
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

# --- frozen_host: node-1 (ranks 2, 3) stops answering after step 20.
t0=$SECONDS
RANKS_PER_HOST=2 timeout $((deadline * 3)) "${MPIRUN[@]}" -np 4 -x RANKS_PER_HOST "${on_hosts[@]}" \
  "$LEMRT_BIN/lemrt_train" --config="$config" \
  --override="training { steps: 1000000 log_every: 10 eval_samples: 0 } $watch" \
  > "$work/host.log" 2>&1 &
job=$!
stop_ranks host "$job" 2 3
t0=$SECONDS
wait "$job"; rc=$?; secs=$((SECONDS - t0))
[ -n "$victims" ] && kill -KILL $victims 2> /dev/null
cut_line="lemrt_train: error: watchdog: rank \([01]\) on host node-0 has waited [0-9]* s (timeout [0-9]* s) in the [a-z() -]* on the [A-Za-z]* communicator (its collective #[0-9]*), in step [0-9]*, stage [a-z_ -]*: \(rank [01] on host node-0 and \)\{0,1\}ranks 2, 3 on host node-1 did not arrive (.*rank 3: no answer within 1 s (stopped, hung or dead)); rank \1 on host node-0 cannot reach ranks 2, 3 on host node-1 (this host is cut off from the others, or every other host stopped); ending this rank."
if [ -n "$victims" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && within_timeout "$work/host.log" "$secs" \
   && grep -q "placement: 4 ranks on 2 hosts: node-0 (ranks 0-1), node-1 (ranks 2-3)" "$work/host.log" \
   && grep -m1 "lemrt_train: error: watchdog:" "$work/host.log" | grep -q "$cut_line"; then
  pass "frozen_host: rc $rc ${secs}s after SIGSTOP: $(grep -m1 -o 'watchdog: rank [01].*' "$work/host.log")"
else
  fail "frozen_host: rc=$rc ${secs}s after SIGSTOP of '$victims'"; tail -n 20 "$work/host.log"
fi

# --- frozen_remote_rank: one rank per "host", rank 2 stops answering.
RANKS_PER_HOST=1 timeout $((deadline * 3)) "${MPIRUN[@]}" -np 3 -x RANKS_PER_HOST "${on_hosts[@]}" \
  "$LEMRT_BIN/lemrt_train" --config="$config" \
  --override="training { steps: 1000000 log_every: 10 eval_samples: 0 } $watch" \
  > "$work/remote.log" 2>&1 &
job=$!
stop_ranks remote "$job" 2
t0=$SECONDS
wait "$job"; rc=$?; secs=$((SECONDS - t0))
[ -n "$victims" ] && kill -KILL $victims 2> /dev/null
if [ -n "$victims" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && within_timeout "$work/remote.log" "$secs" \
   && grep -m1 "lemrt_train: error: watchdog:" "$work/remote.log" \
      | grep -q "lemrt_train: error: watchdog: rank [01] on host node-[01] has waited .*: \(rank [01] on host node-[01] and \)\{0,1\}rank 2 on host node-2 did not arrive (.*rank 2: no answer within 1 s (stopped, hung or dead)); aborting the job."; then
  pass "frozen_remote_rank: rc $rc ${secs}s after SIGSTOP: $(grep -m1 -o 'watchdog: rank [01].*' "$work/remote.log")"
else
  fail "frozen_remote_rank: rc=$rc ${secs}s after SIGSTOP of '$victims'"; tail -n 20 "$work/remote.log"
fi

expect_same_error negative_timeout 2 \
  "watchdog.collective_timeout_s.*must be a finite number of seconds >= 0" \
  --config="$config" --override="watchdog { collective_timeout_s: -1 }"
finish
