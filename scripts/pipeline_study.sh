#!/usr/bin/env bash
# What pipelining costs in accuracy and gains in speed: trains the example
# (or CONFIG) with pipelining off, on, and on with a warm-up, on the same data,
# then writes out/pipeline_study/study.csv (one row per logged step and mode)
# and study.png (eval AUC and loss against steps; samples/s per mode).
#   scripts/pipeline_study.sh [CONFIG] [RANKS] [WARMUP_STEPS]
set -euo pipefail
source "$(dirname "$0")/env.sh"
config="${1:-$LEMRT_ROOT/examples/configs/pipeline_balanced.pbtxt}"
ranks="${2:-1}"
warmup="${3:-100}"
out="$LEMRT_ROOT/out/pipeline_study"
[[ $# -le 3 && "${1:-}" != -* ]] || { [[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,6p' "$0"; exit 0; }
  echo "pipeline_study.sh: usage: scripts/pipeline_study.sh [CONFIG] [RANKS] [WARMUP_STEPS], got '$*'" >&2; exit 2; }
lemrt_file CONFIG "$config"
lemrt_positive_int RANKS "$ranks"
lemrt_nonneg_int WARMUP_STEPS "$warmup"
mkdir -p "$out"
[ -x "$LEMRT_ROOT/build/bin/lemrt_train" ] || { "$LEMRT_ROOT/scripts/install_deps.sh"; lemrt_build "$LEMRT_ROOT/build"; }

declare -A modes=(
  [off]='sparse_core { disable_full_embedding_pipelining: true }'
  [on]=''
  [warmup]="sparse_core { pipeline_warmup_steps: $warmup }"
)
for mode in off on warmup; do
  echo "== pipelining $mode"
  lemrt_fg mpirun -np "$ranks" --oversubscribe --bind-to none "$LEMRT_ROOT/build/bin/lemrt_train" --config="$config" \
    --override="${modes[$mode]} training { eval_every: 50 log_every: 50 }" \
    --metrics_csv="$out/$mode.csv" --summary_json="$out/$mode.json" > "$out/$mode.log" 2>&1 \
    || { cat "$out/$mode.log"; exit 1; }
  grep -E "samples/s  |eval AUC" "$out/$mode.log"
done

"$LEMRT_PYTHON" - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
modes = ["off", "on", "warmup"]
rows, speed = [], {}
for m in modes:
    speed[m] = json.load(open(f"{out}/{m}.json"))
    for r in csv.DictReader(open(f"{out}/{m}.csv")):
        rows.append({"mode": m, **r})
with open(f"{out}/study.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["mode"] + [k for k in rows[0] if k != "mode"])
    w.writeheader(); w.writerows(rows)
print("mode     samples/s  final AUC  final logloss")
for m in modes:
    s = speed[m]
    e = s["eval"]  # auc / logloss absent where undefined (a stopped run: no final evaluation)
    auc = f"{e['auc']:.4f}" if "auc" in e else "absent"
    ll = f"{e['logloss']:.5f}" if "logloss" in e else "absent"
    print(f"{m:8s} {s['samples_per_sec']:10.0f}  {auc:9s}  {ll}")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("python3-matplotlib missing: wrote the CSV only"); sys.exit(0)
fig, ax = plt.subplots(1, 3, figsize=(15, 4))
for m in modes:
    rs = [r for r in rows if r["mode"] == m]
    ev = [r for r in rs if r["eval_auc"]]
    ax[0].plot([int(r["step"]) for r in ev], [float(r["eval_auc"]) for r in ev], marker="o", label=m)
    ax[1].plot([int(r["step"]) for r in rs], [float(r["loss"]) for r in rs], label=m)
ax[0].set(title="eval AUC", xlabel="step"); ax[1].set(title="train loss", xlabel="step")
ax[2].bar(modes, [speed[m]["samples_per_sec"] for m in modes])
ax[2].set(title="samples/s")
for a in ax[:2]: a.legend()
fig.tight_layout(); fig.savefig(f"{out}/study.png", dpi=80)
print(f"wrote {out}/study.csv and {out}/study.png")
PY
