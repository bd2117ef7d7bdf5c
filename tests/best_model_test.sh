#!/usr/bin/env bash
# Best-model checkpoint and early stop end to end (docs/training.md), on
# tests/testdata/levers_dlrm.pbtxt with every learning rate decayed to 0 by
# step 8, so that later evaluations cannot improve and the stop must come:
#  - training.early_stop_evals 2 stops right after the second evaluation in a
#    row without a new best AUC (read from the metrics CSV), and the summary
#    says where (stopped_early_at_step) and which evaluation was best;
#  - checkpoint.keep_best keeps (pins) the best step's checkpoint past
#    keep_last 1, and it holds that step's model: a run of just that many
#    steps (same evaluations, so the same pipeline drains) ends with the
#    checkpoint's model_checksum;
#  - without early_stop_evals the run takes every step and still names its
#    best evaluation.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/levers_dlrm.pbtxt"
frozen="training { steps: 20 eval_every: 2
  learning_rate_schedule { warmup_steps: 0 decay: LINEAR decay_start_step: 4 decay_steps: 4 end_factor: 0 }
  embedding_learning_rate_schedule { warmup_steps: 0 decay: LINEAR decay_start_step: 4 decay_steps: 4 end_factor: 0 } }"

train() {  # train NAME OVERRIDE ARGS...: must succeed on 2 ranks
  local name="$1" override="$2"; shift 2
  timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="$override" --summary_json="$work/$name.json" "$@" \
    > "$work/$name.log" 2>&1 \
    || { cat "$work/$name.log"; echo "FAILED: lemrt_train $name"; exit 1; }
}

train stop "$frozen training { early_stop_evals: 2 } checkpoint { keep_best: true keep_last: 1 }" \
  --checkpoint_dir="$work/ck" --metrics_csv="$work/stop.csv"
grep -q "early stop after step" "$work/stop.log" || { cat "$work/stop.log"; echo "FAILED: no early-stop line"; exit 1; }
best_step="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['best_eval']['step'])" "$work/stop.json")"
train upto_best "$frozen training { steps: $best_step }"
train all "$frozen"

python3 - "$work" <<'PY'
import csv, json, os, re, sys
w = sys.argv[1]
stop, upto, full = (json.load(open(f"{w}/{n}.json")) for n in ["stop", "upto_best", "all"])
fails = []
evals = [(int(r["step"]), float(r["eval_auc"])) for r in csv.DictReader(open(f"{w}/stop.csv"))
         if r["eval_auc"] not in ("", "null", "nan")]
print("evals", evals)
S, best = int(stop.get("stopped_early_at_step", 0)), stop["best_eval"]
print("stopped after", S, "best", best)
if not 0 < S < 20: fails.append(f"stopped_early_at_step {S}")
if not evals or evals[-1][0] != S: fails.append(f"last evaluation at {evals[-1:]} not at the stop {S}")
# The rule: a new best is strictly above every earlier AUC; stop after 2 without one.
top, since, want_stop, want_best = -1.0, 0, 0, None
for step, auc in evals:
    if auc > top + 1e-6: top, since, want_best = auc, 0, step
    else: since += 1
    if since == 2: want_stop = step; break
if want_stop != S: fails.append(f"stopped at {S}, the rule says {want_stop}")
if int(best["step"]) != want_best: fails.append(f"best step {best['step']}, the CSV says {want_best}")
if abs(best["auc"] - top) > 1e-6: fails.append(f"best auc {best['auc']} vs {top}")
ck = best.get("checkpoint", "")
if not ck or not os.path.isdir(ck): fails.append(f"best checkpoint {ck!r} missing")
else:
    saved = re.search(r'model_checksum: "([0-9a-f]+)"', open(f"{ck}/manifest.pbtxt").read()).group(1)
    if saved != upto["model_checksum"]:
        fails.append(f"best checkpoint's model {saved} differs from a {best['step']}-step run's")
if not os.path.isdir(f"{w}/ck/step-{S:08d}"): fails.append(f"no checkpoint of the stop step {S}")
if not re.search(rf"step: {best['step']}\b", open(f"{w}/ck/pins.pbtxt").read()):
    fails.append("pins.pbtxt does not pin the best step")
steps = sorted(d for d in os.listdir(f"{w}/ck") if d.startswith("step-"))
if len(steps) != (1 if int(best["step"]) == S else 2): fails.append(f"kept {steps} with keep_last 1")
if int(full.get("stopped_early_at_step", 0)) != 0: fails.append("a run without early_stop_evals stopped")
if "best_eval" not in full or full["best_eval"].get("checkpoint", ""):
    fails.append(f"without keep_best: best_eval {full.get('best_eval')}")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("ok")
PY
