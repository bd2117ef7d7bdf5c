#!/usr/bin/env bash
# bf16 tables, bf16 exchanges and bf16 dense products against fp32 on a
# config (CONFIG, default examples/configs/dlrm_synthetic.pbtxt: 8 tables, 7
# with Adagrad, one SGD; every `tables { ... }` line must be one line): the
# same run with every table stored as FP32 (fp32), as BF16 with fp32 slots
# (bf16), as BF16 with BF16 slots (bf16_slots), with fp32 tables but the
# all-to-all's activations and gradients in bf16 (bf16_exchange:
# sparse_core.exchange_dtype), with fp32 tables but model.dense_dtype: BF16
# (bf16_dense; needs avx512_bf16 or AMX), and with all of them at once
# (bf16_all), for each seed; prints the final eval AUC and log loss of each
# and the differences to fp32 (docs/training.md, "bf16 tables", "bf16 dense").
#
#   [LEMRT_BUILD=build] [CONFIG=FILE] [SEEDS="1 2 3"] [STEPS=500] [NP=1]
#   [VARIANTS="fp32 bf16 bf16_slots bf16_exchange bf16_dense bf16_all"]
#   scripts/bf16_quality.sh
# (default: fp32 bf16 bf16_slots bf16_exchange, plus bf16_dense and bf16_all
# where /proc/cpuinfo lists avx512_bf16 or AMX)
# Not part of ctest (minutes).
set -euo pipefail
source "$(dirname "$0")/env.sh"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
SEEDS="${SEEDS:-1 2 3}"
STEPS="${STEPS:-500}"
OUT="${OUT:-$LEMRT_ROOT/out/bf16_quality/$(basename "${CONFIG:-dlrm_synthetic}" .pbtxt)}"
mkdir -p "$OUT"
[ -x "$BUILD/bin/lemrt_train" ] || lemrt_build "$BUILD"
base="${CONFIG:-$LEMRT_ROOT/examples/configs/dlrm_synthetic.pbtxt}"
[ -f "$base" ] || { echo "no config file $base"; exit 1; }
default_variants="fp32 bf16 bf16_slots bf16_exchange"
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo 2>/dev/null && default_variants+=" bf16_dense bf16_all"
VARIANTS="${VARIANTS:-$default_variants}"
[[ " $VARIANTS " = *" fp32 "* ]] || { echo "VARIANTS must include fp32 (the reference)"; exit 1; }
declare -A dtypes=([fp32]="" [bf16]="dtype: BF16" [bf16_slots]="dtype: BF16 slot_dtype: BF16"
                   [bf16_exchange]="" [bf16_dense]="" [bf16_all]="dtype: BF16 slot_dtype: BF16")
declare -A overrides=([bf16_exchange]="sparse_core { exchange_dtype: BF16 }"
                      [bf16_dense]="model { dense_dtype: BF16 }"
                      [bf16_all]="sparse_core { exchange_dtype: BF16 } model { dense_dtype: BF16 }")
for variant in $VARIANTS; do
  [ -v "dtypes[$variant]" ] || { echo "unknown variant $variant"; exit 1; }
  sed -e "s/^\(tables {.*\) }$/\1 ${dtypes[$variant]} }/" "$base" > "$OUT/$variant.pbtxt"
  if [ -n "${dtypes[$variant]}" ] && cmp -s "$base" "$OUT/$variant.pbtxt"; then
    echo "$base has no one-line 'tables { ... }' entries to make BF16"; exit 1
  fi
done
for seed in $SEEDS; do
  for variant in $VARIANTS; do
    mpirun --oversubscribe --bind-to none -np "${NP:-1}" "$BUILD/bin/lemrt_train" \
      --config="$OUT/$variant.pbtxt" \
      --override="training { seed: $seed steps: $STEPS eval_every: $STEPS } ${overrides[$variant]:-}" \
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
