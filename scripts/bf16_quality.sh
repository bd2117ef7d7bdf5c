#!/usr/bin/env bash
# bf16 tables and bf16 dense products against fp32 on
# examples/configs/dlrm_synthetic.pbtxt (8 tables, 7 with Adagrad, one SGD):
# the same run with every table stored as FP32 (fp32), as BF16 with fp32
# slots (bf16), as BF16 with BF16 slots (bf16_slots), and with fp32 tables
# but model.dense_dtype: BF16 (bf16_dense; needs avx512_bf16 or AMX), for
# each seed; prints the final eval AUC and log loss of each and the
# differences to fp32 (docs/training.md, "bf16 tables", "bf16 dense").
#
#   [LEMRT_BUILD=build] [SEEDS="1 2 3"] [STEPS=500] [NP=1]
#   [VARIANTS="fp32 bf16 bf16_slots bf16_dense"] scripts/bf16_quality.sh
# (default: all four, bf16_dense only where /proc/cpuinfo lists avx512_bf16 or AMX)
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
default_variants="fp32 bf16 bf16_slots"
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo 2>/dev/null && default_variants+=" bf16_dense"
VARIANTS="${VARIANTS:-$default_variants}"
[[ " $VARIANTS " = *" fp32 "* ]] || { echo "VARIANTS must include fp32 (the reference)"; exit 1; }
declare -A dtypes=([fp32]="" [bf16]="dtype: BF16" [bf16_slots]="dtype: BF16 slot_dtype: BF16"
                   [bf16_dense]="")
declare -A models=([bf16_dense]="model { dense_dtype: BF16 }")
for variant in $VARIANTS; do
  [ -v "dtypes[$variant]" ] || { echo "unknown variant $variant"; exit 1; }
  sed -e "s/^\(tables {.*\) }$/\1 ${dtypes[$variant]} }/" "$base" > "$OUT/$variant.pbtxt"
done
for seed in $SEEDS; do
  for variant in $VARIANTS; do
    mpirun --oversubscribe --bind-to none -np "${NP:-1}" "$BUILD/bin/lemrt_train" \
      --config="$OUT/$variant.pbtxt" \
      --override="training { seed: $seed steps: $STEPS eval_every: $STEPS } ${models[$variant]:-}" \
      --summary_json="$OUT/${variant}_$seed.json" > "$OUT/${variant}_$seed.log" 2>&1 \
      || { tail -5 "$OUT/${variant}_$seed.log"; exit 1; }
  done
done
"${LEMRT_PYTHON:-python3}" - "$OUT" "$VARIANTS" $SEEDS <<'PY'
import json, statistics, sys
out, variants, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
s = {(v, k): json.load(open(f"{out}/{v}_{k}.json")) for v in variants for k in seeds}
auc = lambda v, k: s[(v, k)]["eval"]["auc"]
ll = lambda v, k: s[(v, k)]["eval"]["logloss"]
others = [v for v in variants if v != "fp32"]
print("| seed | fp32 AUC | " + " | ".join(f"{v} AUC (diff)" for v in others) +
      " | log loss " + " / ".join(variants) + " |")
print("| --- " * (len(others) + 3) + "|")
for k in seeds:
    f = auc("fp32", k)
    cells = [f"{auc(v, k):.4f} ({auc(v, k) - f:+.4f})" for v in others]
    print(f"| {k} | {f:.4f} | " + " | ".join(cells) + " | " +
          " / ".join(f"{ll(v, k):.4f}" for v in variants) + " |")
for v in others:
    d = [auc(v, k) - auc("fp32", k) for k in seeds]
    print(f"{v}: AUC - fp32 AUC mean {statistics.mean(d):+.5f}, max |diff| {max(map(abs, d)):.5f}")
PY
