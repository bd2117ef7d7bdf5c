#!/usr/bin/env bash
# Soak test (not in CI): trains with checkpoints while SIGKILLing a
# random rank at random times, resuming from the newest checkpoint each time,
# for SOAK_SECONDS; then lets the last resume finish and checks that its
# model_checksum equals an uninterrupted run's.
#   SOAK_SECONDS (600)  time spent in kill/resume cycles
#   SOAK_NP (2)         ranks          SOAK_STEPS (3000)  steps of the run
#   SOAK_EVERY (100)    checkpoint every N steps
#   SOAK_CONFIG (tests/testdata/small_dlrm.pbtxt)   SOAK_SEED (1) kill timing
#   LEMRT_BIN (build/bin)
# Exit 0 when the checksums match. Usage: scripts/soak.sh
set -uo pipefail
source "$(dirname "$0")/env.sh"
bin="${LEMRT_BIN:-$LEMRT_ROOT/build/bin}"
seconds="${SOAK_SECONDS:-600}"
np="${SOAK_NP:-2}"
steps="${SOAK_STEPS:-3000}"
every="${SOAK_EVERY:-100}"
config="${SOAK_CONFIG:-$LEMRT_ROOT/tests/testdata/small_dlrm.pbtxt}"
RANDOM="${SOAK_SEED:-1}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
override="training { steps: $steps log_every: 0 }"
train() {  # train SUMMARY [args...]
  local summary="$1"; shift
  mpirun --oversubscribe --bind-to none -np "$np" "$bin/lemrt_train" --config="$config" \
    --override="$override" --summary_json="$summary" "$@"
}
checksum() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model_checksum"])' "$1"; }

echo "soak: reference run, $steps steps on $np ranks"
start=$SECONDS
train "$work/ref.json" > "$work/ref.log" 2>&1 || { echo "soak: reference run failed"; tail "$work/ref.log"; exit 1; }
ref_secs=$((SECONDS - start))
ref=$(checksum "$work/ref.json")
echo "soak: reference checksum $ref (${ref_secs}s)"

ckpt="$work/ckpt"
mkdir -p "$ckpt"
kills=0 resumes=0
deadline=$((SECONDS + seconds))
while :; do
  args=(--checkpoint_dir="$ckpt" --checkpoint_every="$every")
  if compgen -G "$ckpt/step-*/manifest.pbtxt" > /dev/null; then
    args+=(--restore_from="$ckpt"); resumes=$((resumes + 1))
  fi
  train "$work/soak.json" "${args[@]}" > "$work/run.log" 2>&1 &
  job=$!
  if [ $SECONDS -ge $deadline ]; then  # last leg: run to the end
    wait "$job" || { echo "soak: final run failed"; tail -n 30 "$work/run.log"; exit 1; }
    break
  fi
  delay=$((2 + RANDOM % (ref_secs > 4 ? ref_secs : 4)))
  for _ in $(seq $((delay * 10))); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  if ! kill -0 "$job" 2>/dev/null; then  # finished before the kill
    wait "$job" || { echo "soak: run failed"; tail -n 30 "$work/run.log"; exit 1; }
    break
  fi
  mpirun_pid=$(pgrep -P "$job" | head -n 1)  # $job is the subshell running train
  ranks=($(pgrep -P "$mpirun_pid" -x lemrt_train))
  [ ${#ranks[@]} -gt 0 ] || { wait "$job" && break; continue; }
  victim=${ranks[$((RANDOM % ${#ranks[@]}))]}
  kill -KILL "$victim" && kills=$((kills + 1))
  for _ in $(seq 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$job" 2>/dev/null; then
    echo "soak: job still running 30 s after SIGKILL of a rank (pid $victim)"; kill -KILL "$mpirun_pid" "${ranks[@]}"; exit 1
  fi
  wait "$job"
  newest=$(ls -d "$ckpt"/step-* 2>/dev/null | tail -n 1)
  echo "soak: killed rank pid $victim after ${delay}s; newest checkpoint ${newest##*/}"
done
got=$(checksum "$work/soak.json")
echo "soak: $kills kills, $resumes resumes; final checksum $got, reference $ref"
[ "$got" = "$ref" ] && echo "soak: PASS" || { echo "soak: FAIL (checksums differ)"; exit 1; }
