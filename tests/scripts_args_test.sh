#!/usr/bin/env bash
# The user-facing scripts refuse bad arguments with one sentence and exit 2
# (they ended with 'x: unbound variable', a Python traceback, an mpirun
# banner, or ignored the argument), before any build, run or namespace; and
# a SIGTERM to a script stops the mpirun it runs (it was left running). No
# MPI, no build: a fake lemrt_train and mpirun. A few seconds.
set -uo pipefail
src="${LEMRT_SRC:-$(cd "$(dirname "$0")/.." && pwd)}"
s="$src/scripts"
work="$(mktemp -d)"
# (Were a check missing, cluster_emulator.sh up would make hosts: removed at exit.)
trap 'bash "$s/cluster_emulator.sh" --prefix=argtest down quiet 2>/dev/null; rm -rf "$work"' EXIT
pass=0 fail=0
mkdir -p "$work/bin"
printf '#!/bin/sh\nexit 0\n' > "$work/bin/lemrt_train"
chmod +x "$work/bin/lemrt_train"
# expect NAME RC SENTENCE CMD...: CMD exits RC and its output has SENTENCE.
expect() {
  local name="$1" want_rc="$2" want="$3" out rc; shift 3
  out="$(timeout 30 "$@" 2>&1 </dev/null)"; rc=$?
  if [[ "$rc" == "$want_rc" && "$out" == *"$want"* ]]; then pass=$((pass + 1))
  else fail=$((fail + 1)); echo "FAIL $name: rc $rc (want $want_rc), output: $(echo "$out" | tail -3)"; fi
}
b=(--bin="$work/bin" --out="$work/o")
expect scaling_no_value 2 "--steps needs a value" bash "$s/scaling.sh" --steps
expect scaling_steps_abc 2 "--steps must be a positive integer, got 'abc'" bash "$s/scaling.sh" "${b[@]}" --steps=abc
expect scaling_batch_abc 2 "--batch_per_chip must be a positive integer, got 'abc'" bash "$s/scaling.sh" "${b[@]}" --batch_per_chip=abc
expect scaling_ranks_0 2 "every --ranks entry must be a positive integer, got '0'" bash "$s/scaling.sh" "${b[@]}" --ranks=0
expect scaling_ranks_empty 2 "--ranks is empty" bash "$s/scaling.sh" "${b[@]}" --ranks=
expect scaling_config 2 "--config '/nonexistent.pbtxt' is not a readable file" bash "$s/scaling.sh" "${b[@]}" --config=/nonexistent.pbtxt
expect scaling_hostfile 2 "--hostfile '/nonexistent' is not a readable file" bash "$s/scaling.sh" "${b[@]}" --hostfile=/nonexistent
expect netscale_hosts 2 "every --hosts entry must be a positive integer, got '0'" bash "$s/network_scaling.sh" "${b[@]}" --hosts=0
expect netscale_rate 2 "every --rates entry must be NUMBER[k|m|g]bit" bash "$s/network_scaling.sh" "${b[@]}" --rates=fast
expect netscale_no_value 2 "--repeats needs a value" bash "$s/network_scaling.sh" --repeats
expect emu_slots 2 "up: --slots must be a positive integer, got 'x'" bash "$s/cluster_emulator.sh" --prefix=argtest up 2 --slots=x
expect emu_rate 2 "up: --rate must be a tc rate" bash "$s/cluster_emulator.sh" --prefix=argtest up 2 --rate=fast
expect emu_delay 2 "shape: --delay must be milliseconds" bash "$s/cluster_emulator.sh" --prefix=argtest shape all --delay=x
expect multihot_args 2 "takes no arguments, got '--steps=3'" bash "$s/multihot_bandwidth.sh" --steps=3
expect multihot_steps 2 "STEPS must be a positive integer, got 'abc'" env STEPS=abc bash "$s/multihot_bandwidth.sh"
expect skew_batches 2 "BATCHES must be a positive integer, got '-1'" env BATCHES=-1 bash "$s/partition_skew.sh"
expect soak_np 2 "SOAK_NP must be a positive integer, got 'x'" env LEMRT_BIN="$work/bin" SOAK_NP=x bash "$s/soak.sh"
expect threads_ranks 2 "every RANKS entry must be a positive integer, got 'x'" env RANKS=x bash "$s/thread_defaults.sh"
expect bf16_seeds 2 "every SEEDS entry must be a non-negative integer, got 'x'" env SEEDS=x bash "$s/bf16_quality.sh"
expect torch_steps 2 "STEPS must be a positive integer, got 'x'" env STEPS=x bash "$s/compare_torch.sh"
expect preprocess_rounds 2 "ROUNDS must be a positive integer, got '0'" env ROUNDS=0 bash "$s/compare_preprocess.sh"
expect pipeline_config 2 "CONFIG '/nonexistent.pbtxt' is not a readable file" bash "$s/pipeline_study.sh" /nonexistent.pbtxt
expect pipeline_ranks 2 "RANKS must be a positive integer, got 'x'" bash "$s/pipeline_study.sh" "$src/tests/testdata/small_dlrm.pbtxt" x
expect example_ranks 2 "LEMRT_RANKS must be a positive integer, got 'x'" env LEMRT_RANKS=x bash "$s/run_example.sh"
expect model_summary 1 "--summary '/nonexistent.json' is not a lemrt_train summary JSON" python3 "$s/scaling_model.py" --summary=/nonexistent.json
expect levers_bin 2 "no /nonexistent/lemrt_train" python3 "$s/levers_study.py" --bin=/nonexistent

# SIGTERM mid-run: a fake mpirun that starts a child and waits; scaling.sh's
# SIGTERM must end both (the script died and left them running).
mkdir -p "$work/path"
cat > "$work/path/mpirun" <<FAKE
#!/bin/bash
sleep 300 & echo \$! > "$work/child"
wait
FAKE
chmod +x "$work/path/mpirun"
PATH="$work/path:$PATH" perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' \
  bash "$s/scaling.sh" "${b[@]}" --ranks=1 --config="$src/tests/testdata/small_dlrm.pbtxt" \
  > "$work/sig.log" 2>&1 &
job=$!
for _ in $(seq 100); do [[ -s "$work/child" ]] && break; sleep 0.1; done
child="$(cat "$work/child" 2>/dev/null)"
kill -TERM "$job"; wait "$job"; rc=$?
sleep 0.5
if [[ -n "$child" && "$rc" == 143 ]] && ! kill -0 "$child" 2>/dev/null \
   && grep -q "SIGTERM: stopping mpirun" "$work/sig.log"; then pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL sigterm_stops_mpirun: rc $rc, child '${child}' $(kill -0 "$child" 2>/dev/null && echo still running)"
  cat "$work/sig.log"; [[ -z "$child" ]] || kill -KILL "$child" 2>/dev/null
fi
echo "$pass passed, $fail failed"
[[ "$fail" == 0 ]]
