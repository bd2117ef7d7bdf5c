#!/usr/bin/env bash
# bf16 tables against fp32 on examples/configs/dlrm_synthetic.pbtxt (8 tables,
# 7 with Adagrad, one SGD): the same run with every table stored as FP32, as
# BF16 with fp32 slots, and as BF16 with BF16 slots, for each seed; prints
# the final eval AUC and log loss of each and the bf16 - fp32 differences
# (docs/training.md, "bf16 tables").
#
#   [LEMRT_BUILD=build] [SEEDS="1 2 3"] [STEPS=500] [NP=1] scripts/bf16_quality.sh
# Not part of ctest (minutes).
set -euo pipefail
source "$(dirname "$0")/env.sh"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
SEEDS="${SEEDS:-1 2 3}"
STEPS="${STEPS:-500}"
OUT="${OUT:-$LEMRT_ROOT/out/bf16_quality}"
mkdir -p "$OUT"
[ -x "$BUILD/bin/lemrt_train" ] || lemrt_build "$BUILD"
base="$LEMRT_ROOT/examples/configs/dlrm_synthetic.pbtxt"
declare -A dtypes=([fp32]="" [bf16]="dtype: BF16" [bf16_slots]="dtype: BF16 slot_dtype: BF16")
for variant in fp32 bf16 bf16_slots; do
  sed -e "s/^\(tables {.*\) }$/\1 ${dtypes[$variant]} }/" "$base" > "$OUT/$variant.pbtxt"
done
for seed in $SEEDS; do
  for variant in fp32 bf16 bf16_slots; do
    mpirun --oversubscribe --bind-to none -np "${NP:-1}" "$BUILD/bin/lemrt_train" \
      --config="$OUT/$variant.pbtxt" \
      --override="training { seed: $seed steps: $STEPS eval_every: $STEPS }" \
      --summary_json="$OUT/${variant}_$seed.json" > "$OUT/${variant}_$seed.log" 2>&1 \
      || { tail -5 "$OUT/${variant}_$seed.log"; exit 1; }
  done
done
"${LEMRT_PYTHON:-python3}" - "$OUT" $SEEDS <<'PY'
import json, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
s = {(v, k): json.load(open(f"{out}/{v}_{k}.json")) for v in ("fp32", "bf16", "bf16_slots") for k in seeds}
auc = lambda v, k: s[(v, k)]["eval"]["auc"]
ll = lambda v, k: s[(v, k)]["eval"]["logloss"]
print("| seed | fp32 AUC | bf16 AUC (diff) | bf16 + bf16 slots AUC (diff) | fp32 / bf16 / bf16+slots log loss |")
print("| --- | --- | --- | --- | --- |")
for k in seeds:
    f = auc("fp32", k)
    print(f"| {k} | {f:.4f} | {auc('bf16', k):.4f} ({auc('bf16', k) - f:+.4f}) | "
          f"{auc('bf16_slots', k):.4f} ({auc('bf16_slots', k) - f:+.4f}) | "
          f"{ll('fp32', k):.4f} / {ll('bf16', k):.4f} / {ll('bf16_slots', k):.4f} |")
for v in ("bf16", "bf16_slots"):
    d = [auc(v, k) - auc("fp32", k) for k in seeds]
    print(f"{v}: AUC - fp32 AUC mean {statistics.mean(d):+.5f}, max |diff| {max(map(abs, d)):.5f}")
PY
