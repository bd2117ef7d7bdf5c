#!/usr/bin/env bash
# A job across emulated hosts (scripts/cluster_emulator.sh) over TCP trains
# the same model as the same ranks on one machine:
#  - 2 hosts x 2 ranks through scripts/lemrt_run end with the model_checksum
#    of 4 local ranks, and host 1's link carried the exchange (> 1 MB);
#  - placement: the summary JSON and the end-of-run report name both hosts
#    (each rank's host; the format is runtime/'s);
#  - with every host link shaped to 1 Mbit/s by tbf (steps several times
#    slower, their exchange queued behind a full link) with a watchdog of 3 s
#    and the launcher's 5 s keepalive, no false alarm: the same checksum.
#  - shared_hostname: two hosts with one hostname (a careless container setup;
#    Open MPI's shared-memory transport then crashes) end with an error
#    sentence naming the hostname before the job starts (lemrt_run's host
#    check: Open MPI crashes inside MPI's start-up, before lemrt_train could
#    say anything), within 60 s.
# Needs root and network namespaces (skips with one line otherwise), LEMRT_BIN
# and LEMRT_SRC.
set -uo pipefail
source "$(dirname "$0")/cluster_lib.sh"
steps='training { steps: 12 log_every: 0 eval_samples: 192 }'

timeout 120 mpirun --oversubscribe --bind-to none -np 4 "$LEMRT_BIN/lemrt_train" --config="$config" \
  --override="$steps" --summary_json="$work/local.json" > "$work/local.log" 2>&1 \
  || { tail -n 20 "$work/local.log"; echo "FAIL: the local run failed"; exit 1; }
want="$(json "$work/local.json" 'd["model_checksum"]')"

cluster_up 2
cluster_run -- "$LEMRT_BIN/lemrt_train" --config="$config" --override="$steps" \
  --summary_json="$work/cluster.json" > "$work/cluster.log" 2>&1
rc=$?
bytes="$(host_link_bytes "$h1")"
got="$(json "$work/cluster.json" 'd["model_checksum"]' 2>/dev/null)"
if [ "$rc" -eq 0 ] && [ "$got" = "$want" ] && [ "$bytes" -gt 1000000 ] \
   && grep -q "^lemrt_run: mpirun .*--mca btl_tcp_if_include 10.213.0.0/24" "$work/cluster.log"; then
  pass "two_hosts: 2 hosts x 2 ranks end with the checksum of 4 local ranks ($want); host 1's link carried $bytes bytes"
else
  fail "two_hosts: rc=$rc, checksum $got (local $want), host 1's link carried $bytes bytes"
  tail -n 20 "$work/cluster.log"
fi

report="$(sed -n '/lemrt run summary/,$p' "$work/cluster.log")"
if grep -q "$h0" "$work/cluster.json" && grep -q "$h1" "$work/cluster.json" \
   && grep -q "$h0" <<< "$report" && grep -q "$h1" <<< "$report"; then
  pass "placement: the summary JSON and the end-of-run report name $h0 and $h1"
else
  fail "placement: the summary JSON or the end-of-run report does not name both $h0 and $h1"
fi

"$emu" --prefix="$prefix" shape all --rate=1mbit
slow="$steps watchdog { collective_timeout_s: 3 }"
t0=$SECONDS
cluster_run -- "$LEMRT_BIN/lemrt_train" --config="$config" --override="$slow" \
  --summary_json="$work/slow.json" > "$work/slow.log" 2>&1
rc=$?
got="$(json "$work/slow.json" 'd["model_checksum"]' 2>/dev/null)"
fast_ms="$(json "$work/cluster.json" 'd["step_time_ms"]["mean"]')"
slow_ms="$(json "$work/slow.json" 'd["step_time_ms"]["mean"]' 2>/dev/null)"
if [ "$rc" -eq 0 ] && [ "$got" = "$want" ] && ! grep -q "watchdog:" "$work/slow.log" \
   && python3 -c "import sys; sys.exit(not float('$slow_ms') > 3 * float('$fast_ms'))"; then
  pass "slow_link: at 1 Mbit/s a step takes $slow_ms ms (unshaped $fast_ms ms), no watchdog alarm, the same checksum"
else
  fail "slow_link: rc=$rc, checksum $got (want $want), step $slow_ms ms vs $fast_ms ms, $((SECONDS - t0)) s"
  grep -v "^I2" "$work/slow.log" | tail -n 20
fi

"$emu" --prefix="$prefix" down quiet
cluster_up 2 --hostname=twin
t0=$SECONDS
run_timeout=60 cluster_run -- "$LEMRT_BIN/lemrt_train" --config="$config" \
  --override='training { steps: 5 log_every: 1 }' > "$work/twin.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep "lemrt_run: error:" "$work/twin.log" | grep -q "call themselves 'twin'" \
   && ! grep -q "step [0-9]*/" "$work/twin.log"; then
  pass "shared_hostname: $((SECONDS - t0))s, rc $rc: $(grep -m1 "lemrt_run: error:" "$work/twin.log")"
else
  fail "shared_hostname: rc=$rc after $((SECONDS - t0))s, no error sentence naming the shared hostname 'twin' before the first step"
  grep -v "^I2\|^W2" "$work/twin.log" | grep -m3 "error\|Segmentation\|signal"
fi
finish
