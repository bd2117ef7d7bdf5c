#!/usr/bin/env bash
# lemrt_train's default threads against every combination of pipelining on/off
# and host workers on/off, at 1, 2 and 4 ranks on this machine (docs/
# performance.md "Threads and cores"). Each rank count runs ROUNDS rounds; in
# a round the five variants run one after another, starting one variant later
# each round, so a change of load hits all of them and none always runs first. Prints median samples/s per variant, the
# default's share of the best variant (median of the per-round ratios, with
# range) and the plan the default chose. Not part of ctest (minutes).
#
#   scripts/thread_defaults.sh                          # criteo_kaggle_shape, batch 1024
#   CONFIG=examples/configs/dlrm_synthetic.pbtxt BATCH=1536 scripts/thread_defaults.sh
#
# Env: LEMRT_BUILD (default build), CONFIG (default examples/configs/
# criteo_kaggle_shape.pbtxt, trained on a synthetic Criteo TSV), BATCH (global
# batch, default 1024), STEPS (default 200), RANKS (default "1 2 4"), ROUNDS
# (default 3), OUT (default out/thread_defaults).
set -euo pipefail
source "$(dirname "$0")/env.sh"
lemrt_no_args "$@"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
CONFIG="${CONFIG:-$LEMRT_ROOT/examples/configs/criteo_kaggle_shape.pbtxt}"
[[ "$CONFIG" = /* ]] || CONFIG="$LEMRT_ROOT/$CONFIG"
BATCH="${BATCH:-1024}"
STEPS="${STEPS:-200}"
RANKS="${RANKS:-1 2 4}"
ROUNDS="${ROUNDS:-3}"
OUT="${OUT:-$LEMRT_ROOT/out/thread_defaults}"
lemrt_file CONFIG "$CONFIG"
lemrt_positive_int BATCH "$BATCH"; lemrt_positive_int STEPS "$STEPS"; lemrt_positive_int ROUNDS "$ROUNDS"
for w in $RANKS; do lemrt_positive_int "every RANKS entry" "$w"; done
[ -n "${RANKS// }" ] || { echo "$LEMRT_ME: RANKS is empty" >&2; exit 2; }
mkdir -p "$OUT"
if [ ! -x "$BUILD/bin/lemrt_train" ]; then lemrt_build "$BUILD"; fi

data=""
if grep -q "criteo" "$CONFIG"; then
  DATA="$OUT/criteo_synth.tsv"
  lines=$(( BATCH * STEPS * 11 / 10 + 1024 ))
  if [ ! -f "$DATA" ] || [ "$(wc -l < "$DATA")" -lt "$lines" ]; then
    "$LEMRT_PYTHON" "$LEMRT_ROOT/scripts/gen_criteo_tsv.py" --lines "$lines" --out "$DATA"
  fi
  data="data { criteo { train_path: '$DATA' } }"
fi

variants=(default pipe+host pipe host none)
override_of() {
  case "$1" in
    default) echo "" ;;
    pipe+host) echo "sparse_core { disable_full_embedding_pipelining: false pipeline_without_threads: false maximum_parallel_iterations: 2 }" ;;
    pipe) echo "sparse_core { disable_full_embedding_pipelining: false pipeline_without_threads: false maximum_parallel_iterations: 0 }" ;;
    host) echo "sparse_core { disable_full_embedding_pipelining: true maximum_parallel_iterations: 2 }" ;;
    none) echo "sparse_core { disable_full_embedding_pipelining: true maximum_parallel_iterations: 0 }" ;;
  esac
}

printf '\n%-6s %9s %9s %9s %9s %9s %22s  %s\n' ranks "${variants[@]}" "default/best" "default chose"
for w in $RANKS; do
  : > "$OUT/rounds_w$w.txt"
  for r in $(seq 1 "$ROUNDS"); do
    # Round r starts at variant r - 1 (rotated), so no variant always runs
    # first or last in a round.
    declare -A rate=()
    for i in "${!variants[@]}"; do
      v="${variants[$(( (i + r - 1) % ${#variants[@]} ))]}"
      tag="w${w}_$v"
      lemrt_fg mpirun --bind-to none -np "$w" "$BUILD/bin/lemrt_train" --config="$CONFIG" \
        --override="$data training { global_batch: $BATCH steps: $STEPS log_every: 0 eval_samples: 0 } $(override_of "$v")" \
        --summary_json="$OUT/$tag.json" > "$OUT/$tag.log" 2>&1 || { cat "$OUT/$tag.log"; exit 1; }
      rate[$v]="$("$LEMRT_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['samples_per_sec'])" "$OUT/$tag.json")"
    done
    row=""
    for v in "${variants[@]}"; do row+="${rate[$v]} "; done
    unset rate
    echo "$row $(uptime | sed 's/.*average: //; s/,.*//')" >> "$OUT/rounds_w$w.txt"
  done
  "$LEMRT_PYTHON" - "$w" "$OUT/rounds_w$w.txt" "$OUT/w${w}_default.json" <<'PY'
import json, statistics as st, sys
w, rounds, dj = sys.argv[1:]
rows = [list(map(float, l.split())) for l in open(rounds) if l.strip()]
cols = list(zip(*[r[:5] for r in rows]))
share = [r[0] / max(r[1:5]) for r in rows]
s = json.load(open(dj))
t = s.get("threads", {})
executor = " (executor thread)" if t.get("sparsecore_executor_thread") else " (one thread)"
chose = (f"pipelining {'on' + executor if s.get('pipelining') else 'off'}, "
         f"host workers {t.get('host_worker_threads', 0)}, "  # the workers that ran (0: inline)
         f"gemm threads {t.get('gemm_threads', '?')}")
print(f"{w:<6} " + " ".join(f"{st.median(c):9.0f}" for c in cols) +
      f" {st.median(share):9.2f} ({min(share):.2f}-{max(share):.2f})  {chose}"
      f"   load {min(r[5] for r in rows):.1f}-{max(r[5] for r in rows):.1f}")
PY
done
echo
echo "samples/s: medians over $ROUNDS rounds; default/best: median (range) over the rounds of the"
echo "default's samples/s over the best of the four explicit variants in the same round"
