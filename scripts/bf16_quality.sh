#!/usr/bin/env bash
# bf16 tables, bf16 exchanges and bf16 dense products against fp32 on a
# config (CONFIG, default examples/configs/dlrm_synthetic.pbtxt): the same run
# with every table stored as FP32 (fp32), as BF16 with fp32 slots (bf16), as
# BF16 with BF16 slots (bf16_slots), with fp32 tables but the all-to-all's
# activations and gradients in bf16 (bf16_exchange: sparse_core.exchange_dtype),
# with fp32 tables but model.dense_dtype: BF16 (bf16_dense; needs avx512_bf16
# or AMX), and with all of them at once (bf16_all), for each seed; prints the
# final eval AUC and log loss of each, the differences to fp32 per seed, and
# per variant their mean, spread and whether the mean is within 0.001 AUC
# (docs/training.md, "bf16 tables", "bf16 dense", "bf16 on the levers study",
# "bf16 on the Criteo recipe").
#
#   [LEMRT_BUILD=build] [CONFIG=FILE] [SEEDS="1 2 3"] [STEPS=500] [NP=1]
#   [VARIANTS="fp32 bf16 bf16_slots bf16_exchange bf16_dense bf16_all"]
#   [DATA=criteo_like [DATA_DIR=out/criteo_recipe]] [OUT=DIR]
#   [OVERRIDE=TEXT] [PERTURB=TEXT] scripts/bf16_quality.sh
# (default variants: fp32 bf16 bf16_slots bf16_exchange, plus bf16_dense and
# bf16_all where /proc/cpuinfo lists avx512_bf16 or AMX.)
# OVERRIDE is merged into every run's config. PERTURB allows the variant
# fp32_perturbed: fp32 with PERTURB merged (a yardstick: how far the results
# move under a small change that keeps every number fp32, e.g. the learning
# rates x 1.001).
# The table fields are set in every `tables { ... }` entry of CONFIG, one line
# or many, by scripts/table_fields.py (FP32 explicitly for fp32). A variant
# NAME@N runs on N ranks instead of NP; its differences are to fp32@N when
# VARIANTS has it, else to fp32 (so `fp32@2` against `fp32` is the noise of
# the float sums' order alone).
# DATA=criteo_like: for examples/configs/criteo_recipe.pbtxt. Each seed trains
# on the Criteo-like data of scripts/criteo_recipe_study.py for that seed (the
# same lines, split, vocabularies and dense statistics; written under DATA_DIR
# unless there already), in that seed's directory, with the statistics merged
# into data.schema; STEPS defaults to empty there: the config's own length
# (3 epochs), evaluated at its end. Model seed = data seed, as in that study.
# Not part of ctest (minutes).
set -euo pipefail
source "$(dirname "$0")/env.sh"
lemrt_no_args "$@"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
SEEDS="${SEEDS:-1 2 3}"
for s in $SEEDS; do lemrt_nonneg_int "every SEEDS entry" "$s"; done
[ -n "${SEEDS// }" ] || { echo "$LEMRT_ME: SEEDS is empty" >&2; exit 2; }
lemrt_positive_int NP "${NP:-1}"
DATA="${DATA:-}"
case "$DATA" in
  "") STEPS="${STEPS-500}" ;;
  criteo_like) STEPS="${STEPS-}" ;;
  *) echo "DATA must be empty or criteo_like, got '$DATA'"; exit 1 ;;
esac
base="$(realpath -m "${CONFIG:-$LEMRT_ROOT/examples/configs/dlrm_synthetic.pbtxt}")"
[ -z "$STEPS" ] || lemrt_positive_int STEPS "$STEPS"
[ -f "$base" ] || { echo "no config file $base"; exit 1; }
OUT="$(realpath -m "${OUT:-$LEMRT_ROOT/out/bf16_quality/$(basename "$base" .pbtxt)}")"
mkdir -p "$OUT"
[ -x "$BUILD/bin/lemrt_train" ] || lemrt_build "$BUILD"
py="${LEMRT_PYTHON:-python3}"
default_variants="fp32 bf16 bf16_slots bf16_exchange"
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo 2>/dev/null && default_variants+=" bf16_dense bf16_all"
VARIANTS="${VARIANTS:-$default_variants}"
[[ " $VARIANTS " = *" fp32 "* ]] || { echo "VARIANTS must include fp32 (the reference)"; exit 1; }
declare -A tables=([fp32]="dtype: FP32 slot_dtype: FP32" [bf16]="dtype: BF16 slot_dtype: FP32"
                   [bf16_slots]="dtype: BF16 slot_dtype: BF16"
                   [bf16_exchange]="dtype: FP32 slot_dtype: FP32"
                   [bf16_dense]="dtype: FP32 slot_dtype: FP32"
                   [bf16_all]="dtype: BF16 slot_dtype: BF16")
declare -A overrides=([bf16_exchange]="sparse_core { exchange_dtype: BF16 }"
                      [bf16_dense]="model { dense_dtype: BF16 }"
                      [bf16_all]="sparse_core { exchange_dtype: BF16 } model { dense_dtype: BF16 }")
if [ -n "${PERTURB:-}" ]; then
  tables[fp32_perturbed]="${tables[fp32]}"
  overrides[fp32_perturbed]="$PERTURB"
fi
for variant in $VARIANTS; do
  name="${variant%@*}"
  [ -v "tables[$name]" ] || { echo "unknown variant $variant (fp32_perturbed needs PERTURB)"; exit 1; }
  [[ "$variant" != *@* || "${variant#*@}" =~ ^[1-9][0-9]*$ ]] \
    || { echo "variant $variant: the rank count after @ must be a positive integer"; exit 1; }
  "$py" "$LEMRT_ROOT/scripts/table_fields.py" --set "${tables[$name]}" "$base" "$OUT/$name.pbtxt"
done

# The directory each seed's runs start in (the caller's, without DATA), and
# the text merged into data.schema.
declare -A workdir schema
if [ "$DATA" = criteo_like ]; then
  DATA_DIR="$(realpath -m "${DATA_DIR:-$LEMRT_ROOT/out/criteo_recipe}")"
  "$py" "$LEMRT_ROOT/scripts/criteo_recipe_study.py" --prepare_only --bin "$BUILD/bin" \
    --seeds "$(echo $SEEDS | tr ' ' ,)" --out "$DATA_DIR" > "$OUT/prepare.log" 2>&1 \
    || { tail -5 "$OUT/prepare.log"; exit 1; }
fi
for seed in $SEEDS; do
  workdir[$seed]="$PWD"
  schema[$seed]=""
  if [ "$DATA" = criteo_like ]; then
    workdir[$seed]="$DATA_DIR/seed$seed"
    schema[$seed]="data { schema { $(grep '^dense' "$DATA_DIR/seed$seed/vocab/dense_stats.pbtxt") } }"
  fi
done

length=""
[ -z "$STEPS" ] || length="steps: $STEPS eval_every: $STEPS"
for seed in $SEEDS; do
  for variant in $VARIANTS; do
    name="${variant%@*}"
    np="${NP:-1}"
    [[ "$variant" != *@* ]] || np="${variant#*@}"
    lemrt_fg env -C "${workdir[$seed]}" mpirun --oversubscribe --bind-to none -np "$np" "$BUILD/bin/lemrt_train" \
      --config="$OUT/$name.pbtxt" \
      --override="training { seed: $seed $length } ${overrides[$name]:-} ${schema[$seed]} ${OVERRIDE:-}" \
      --summary_json="$OUT/${variant/@/_np}_$seed.json" > "$OUT/${variant/@/_np}_$seed.log" 2>&1 \
      || { tail -5 "$OUT/${variant/@/_np}_$seed.log"; exit 1; }
  done
done
"$py" "$LEMRT_ROOT/scripts/bf16_quality_table.py" "$OUT" "$VARIANTS" $SEEDS
