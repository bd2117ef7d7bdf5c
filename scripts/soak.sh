#!/usr/bin/env bash
# Soak test (not in CI): trains with checkpoints while failing a random rank
# at random times, resuming from the newest checkpoint each time, for
# SOAK_SECONDS; then lets the last resume finish and checks that its
# model_checksum equals that of an uninterrupted run with the same
# checkpoint cadence (a save drains the pipeline, so the reference saves at
# the same steps), and that the checkpoint directory verifies.
# A failure is a SIGKILL (mpirun ends the job) or, with probability
# SOAK_FREEZE_PERCENT, a SIGSTOP (the collective watchdog must end the job,
# naming the frozen rank).
#   SOAK_SECONDS (600)  time spent in fail/resume cycles
#   SOAK_NP (2)         ranks          SOAK_STEPS (3000)  steps of the run
#   SOAK_EVERY (100)    checkpoint every N steps
#   SOAK_FREEZE_PERCENT (25)  share of failures that freeze instead of kill
#   SOAK_WATCHDOG_S (5) watchdog.collective_timeout_s of the runs
#   SOAK_CONFIG (tests/testdata/small_dlrm.pbtxt)   SOAK_SEED (1) failure timing
#   LEMRT_BIN (build/bin)
# Exit 0 when the checksums match. Usage: scripts/soak.sh
set -uo pipefail
source "$(dirname "$0")/env.sh"
lemrt_no_args "$@"
bin="${LEMRT_BIN:-$LEMRT_ROOT/build/bin}"
seconds="${SOAK_SECONDS:-600}"
np="${SOAK_NP:-2}"
steps="${SOAK_STEPS:-3000}"
every="${SOAK_EVERY:-100}"
freeze_percent="${SOAK_FREEZE_PERCENT:-25}"
watchdog_s="${SOAK_WATCHDOG_S:-5}"
config="${SOAK_CONFIG:-$LEMRT_ROOT/tests/testdata/small_dlrm.pbtxt}"
RANDOM="${SOAK_SEED:-1}"
lemrt_positive_int SOAK_SECONDS "$seconds"; lemrt_positive_int SOAK_NP "$np"
lemrt_positive_int SOAK_STEPS "$steps"; lemrt_positive_int SOAK_EVERY "$every"
lemrt_nonneg_int SOAK_FREEZE_PERCENT "$freeze_percent"; lemrt_positive_int SOAK_WATCHDOG_S "$watchdog_s"
lemrt_nonneg_int SOAK_SEED "${SOAK_SEED:-1}"
lemrt_file SOAK_CONFIG "$config"
[ -x "$bin/lemrt_train" ] || { echo "$LEMRT_ME: no $bin/lemrt_train (build first, or set LEMRT_BIN)" >&2; exit 1; }
work="$(mktemp -d)"
# A signal ends the run in flight (its mpirun and ranks) before the script.
# (job: the subshell running train; its child is mpirun.)
stop_job() {
  [ -n "${job:-}" ] || return 0
  echo "soak: stopping the run in flight" >&2
  { pkill -TERM -P "$job"; sleep 3; pkill -KILL -P "$job"; kill -KILL "$job" "${ranks[@]}"; } 2>/dev/null
  wait "$job" 2>/dev/null
}
trap 'rm -rf "$work"' EXIT
trap 'stop_job; exit 130' INT
trap 'stop_job; exit 143' TERM
ranks=()
override="training { steps: $steps log_every: 0 } watchdog { collective_timeout_s: $watchdog_s }"
train() {  # train SUMMARY [args...]
  local summary="$1"; shift
  mpirun --oversubscribe --bind-to none -np "$np" "$bin/lemrt_train" --config="$config" \
    --override="$override" --summary_json="$summary" "$@"
}
checksum() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model_checksum"])' "$1"; }
# waits up to $1 tenths of a second for $job to end; true when it did.
ended_within() { for _ in $(seq "$1"); do kill -0 "$job" 2>/dev/null || return 0; sleep 0.1; done; ! kill -0 "$job" 2>/dev/null; }

echo "soak: reference run, $steps steps on $np ranks, a checkpoint every $every"
start=$SECONDS
train "$work/ref.json" --checkpoint_dir="$work/refck" --checkpoint_every="$every" \
  > "$work/ref.log" 2>&1 &
job=$!
wait "$job" || { echo "soak: reference run failed"; tail "$work/ref.log"; exit 1; }
ref_secs=$((SECONDS - start))
ref=$(checksum "$work/ref.json")
echo "soak: reference checksum $ref (${ref_secs}s)"

ckpt="$work/ckpt"
mkdir -p "$ckpt"
kills=0 freezes=0 resumes=0
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
  if ended_within $((delay * 10)); then  # finished before the failure
    wait "$job" || { echo "soak: run failed"; tail -n 30 "$work/run.log"; exit 1; }
    break
  fi
  mpirun_pid=$(pgrep -P "$job" | head -n 1)  # $job is the subshell running train
  ranks=()
  [ -n "$mpirun_pid" ] && ranks=($(pgrep -P "$mpirun_pid" -x lemrt_train))
  [ ${#ranks[@]} -gt 0 ] || { wait "$job" && break; continue; }
  victim=${ranks[$((RANDOM % ${#ranks[@]}))]}
  if [ $((RANDOM % 100)) -lt "$freeze_percent" ]; then
    how=SIGSTOP; kill -STOP "$victim" && freezes=$((freezes + 1))
  else
    how=SIGKILL; kill -KILL "$victim" && kills=$((kills + 1))
  fi
  t0=$SECONDS
  if ! ended_within $(((watchdog_s + 30) * 10)); then
    echo "soak: job still running $((SECONDS - t0)) s after $how of a rank (pid $victim)"
    kill -KILL "$mpirun_pid" "${ranks[@]}"; exit 1
  fi
  wait "$job"
  secs=$((SECONDS - t0))
  kill -KILL "$victim" 2>/dev/null  # a frozen rank mpirun left behind
  if [ "$how" = SIGSTOP ] && ! grep -q "watchdog: .* did not arrive" "$work/run.log"; then
    echo "soak: the job ended after a SIGSTOP without the watchdog's sentence"; tail -n 20 "$work/run.log"; exit 1
  fi
  newest=$(ls -d "$ckpt"/step-* 2>/dev/null | tail -n 1)
  echo "soak: $how to rank pid $victim after ${delay}s, job ended ${secs}s later; newest checkpoint ${newest##*/}"
done
got=$(checksum "$work/soak.json")
echo "soak: $kills kills, $freezes freezes, $resumes resumes; final checksum $got, reference $ref"
"$bin/lemrt_ckpt" verify "$ckpt" > "$work/verify" 2>&1 || { echo "soak: FAIL (lemrt_ckpt verify)"; cat "$work/verify"; exit 1; }
[ "$got" = "$ref" ] && echo "soak: PASS" || { echo "soak: FAIL (checksums differ)"; exit 1; }
