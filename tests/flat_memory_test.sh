#!/usr/bin/env bash
# A run's memory does not grow with training.steps: lemrt_train with
# `steps: 100000000` on 2 ranks (the small test DLRM) starts at once (it used
# to preallocate ~192 B per step for the run recorder, ~19 GB per rank here)
# and its resident memory stays flat while it trains: from step 200 to step
# 800 each rank grows by less than 16 MiB, and its peak stays under 1 GiB.
# The job is stopped after that. Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
job=""
cleanup() {
  [ -n "$job" ] && kill "$job" 2> /dev/null && wait "$job" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
scale=${LEMRT_TEST_TIME_SCALE:-1}
steps=100000000

timeout $((300 * scale)) mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
  --config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" \
  --override="training { steps: $steps log_every: 100 eval_samples: 192 }" > "$work/log" 2>&1 &
job=$!

# The ranks: lemrt_train processes below the job (timeout -> mpirun -> ranks).
ranks() {
  local p c
  for p in $(ps -o pid= --ppid "$job"); do
    for c in $(ps -o pid= --ppid "$p"); do
      [ "$(cat "/proc/$c/comm" 2> /dev/null)" = lemrt_train ] && echo "$c"
    done
  done
}
# status_kib PID FIELD: VmRSS or VmHWM of PID in KiB.
status_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2> /dev/null; }
wait_for_step() {
  local deadline=$((SECONDS + 240 * scale))
  until grep -q "step $1/$steps " "$work/log"; do
    if ! kill -0 "$job" 2> /dev/null || [ $SECONDS -gt $deadline ]; then
      echo "FAIL: no progress line for step $1"
      tail -n 30 "$work/log"
      exit 1
    fi
    sleep 0.2
  done
}

wait_for_step 200
declare -A first
pids=$(ranks)
[ "$(echo "$pids" | wc -w)" -eq 2 ] || { echo "FAIL: expected 2 ranks, found '$pids'"; exit 1; }
for p in $pids; do first[$p]=$(status_kib "$p" VmRSS); done
wait_for_step 800
failed=0
for p in $pids; do
  rss=$(status_kib "$p" VmRSS)
  hwm=$(status_kib "$p" VmHWM)
  growth=$((rss - first[$p]))
  echo "rank pid $p: VmRSS ${first[$p]} KiB at step 200, $rss KiB at step 800 (+$growth), VmHWM $hwm KiB"
  if [ "$growth" -ge 16384 ] || [ "$hwm" -ge 1048576 ]; then
    echo "FAIL: memory grows with the steps"
    failed=1
  fi
done
[ "$failed" -eq 0 ] && echo "ok   flat memory over 600 steps of a 10^8-step run"
exit "$failed"
