#!/usr/bin/env bash
# One rank SIGKILLed mid-step: the whole job must end within 30 s
# with a non-zero exit and no rank left running. Killing rank 0 and a
# non-zero rank are both checked. Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/fault_lib.sh"

# alive PID: the process exists and is not a zombie.
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# kill_one NAME NP INDEX: starts a long run on NP ranks, waits for its
# progress line at step 20, SIGKILLs the INDEX-th rank process (0-based, by
# start order) and checks how the job ends.
kill_one() {
  local name="$1" np="$2" index="$3"
  timeout 300 "${MPIRUN[@]}" -np "$np" "$LEMRT_BIN/lemrt_train" --config="$config" \
    --override='training { steps: 1000000 log_every: 20 eval_samples: 0 }' > "$work/out" 2>&1 &
  local job=$!
  local i
  for i in $(seq 600); do  # up to 60 s to reach step 20
    grep -q "step 20/" "$work/out" && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  local mpirun_pid ranks victim
  mpirun_pid=$(pgrep -P "$job" | head -n 1)
  ranks=$(pgrep -P "$mpirun_pid" -x lemrt_train | sort -n | tr '\n' ' ')
  victim=$(echo "$ranks" | awk -v k=$((index + 1)) '{print $k}')
  if ! grep -q "step 20/" "$work/out" || [ "$(echo $ranks | wc -w)" -ne "$np" ] || [ -z "$victim" ]; then
    kill "$job" 2>/dev/null; wait "$job"
    echo "FAIL $name: the job did not reach step 20 with $np ranks (ranks: $ranks; job rc $?," \
      "$(wc -c < "$work/out") bytes of output)"
    tail -n 20 "$work/out"
    failed=$((failed + 1)); return
  fi
  local start=$SECONDS
  kill -KILL "$victim"
  local ended=0
  for i in $(seq 300); do  # 30 s
    if ! kill -0 "$job" 2>/dev/null; then ended=1; break; fi
    sleep 0.1
  done
  local secs=$((SECONDS - start)) rc=0
  if [ "$ended" -eq 0 ]; then
    echo "FAIL $name: the job still runs 30 s after SIGKILL of pid $victim"
    kill -KILL $ranks "$mpirun_pid" 2>/dev/null; wait "$job"
    failed=$((failed + 1)); return
  fi
  wait "$job"; rc=$?
  # mpirun has exited; the other ranks must be gone too (zombies waiting to be
  # reaped by init count as gone), by the end of the same 30 s.
  local left=""
  while :; do
    left=""
    for p in $ranks; do alive "$p" && left="$left $p"; done
    [ -z "$left" ] || [ $((SECONDS - start)) -ge 30 ] && break
    sleep 0.1
  done
  secs=$((SECONDS - start))
  if [ "$rc" -eq 0 ] || [ -n "$left" ]; then
    echo "FAIL $name: rc=$rc, ranks left running ${secs}s after SIGKILL:${left:- none}"
    ps -o pid,stat,etime,cmd -p ${left:-1}
    tail -n 20 "$work/out"; failed=$((failed + 1))
    [ -n "$left" ] && kill -KILL $left 2>/dev/null
    return
  fi
  passed=$((passed + 1))
  echo "ok   $name: job ended ${secs}s after SIGKILL, rc=$rc, no rank left"
}

kill_one kill_rank1_of_3 3 1
kill_one kill_rank0_of_2 2 0
finish
