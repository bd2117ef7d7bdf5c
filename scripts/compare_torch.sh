#!/usr/bin/env bash
# lemrt against a plain PyTorch DLRM (scripts/torch_dlrm.py) on the same model
# (examples/configs/criteo_kaggle_shape.pbtxt: Criteo Kaggle shape, 26 x
# 100,000 x 16, SGD lr 0.1, one-hot ids), the same data (one synthetic
# Criteo TSV, scripts/gen_criteo_tsv.py) and the same init scheme, at batch
# 128 and 1024, on 1 and 2 ranks. Prints samples/s of each, the ratio and the
# two loss curves. Not part of ctest (minutes).
#
#   scripts/compare_torch.sh                 # builds build/ first
#   LEMRT_BUILD=build-x STEPS=60 scripts/compare_torch.sh
#
# Env: LEMRT_BUILD (build dir, default build), STEPS (default 100),
# BATCHES (default "128 1024"), RANKS (default "1 2"), OUT (default out/torch),
# PYTHON (default /usr/bin/python3, where Debian's torch lives).
#
# lemrt runs as a user should on this machine: MPI ranks yield the core while
# waiting (mpi_yield_when_idle; Open MPI busy-polls by default, which starves
# the peer rank when ranks share cores), and pipelining (two busy threads per
# rank) stays on only where every rank has two cores (ranks x 2 <= cores);
# the lemrt_pipelining column says which.
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$LEMRT_ROOT/scripts/install_torch.sh"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
STEPS="${STEPS:-100}"
BATCHES="${BATCHES:-128 1024}"
RANKS="${RANKS:-1 2}"
OUT="${OUT:-$LEMRT_ROOT/out/torch}"
# Debian's interpreter, where python3-torch is installed (not a pyenv/venv one).
PY="${PYTHON:-/usr/bin/python3}"
mkdir -p "$OUT"
if [ ! -x "$BUILD/bin/lemrt_train" ]; then lemrt_build "$BUILD"; fi

max_batch=0
for b in $BATCHES; do [ "$b" -gt "$max_batch" ] && max_batch=$b; done
DATA="$OUT/criteo_synth.tsv"
lines=$(( max_batch * STEPS * 11 / 10 + 1024 ))
if [ ! -f "$DATA" ] || [ "$(wc -l < "$DATA")" -lt "$lines" ]; then
  "$PY" "$LEMRT_ROOT/scripts/gen_criteo_tsv.py" --lines "$lines" --out "$DATA"
fi

summary_field() {  # summary_field FILE FIELD
  "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"
}

printf '\n%-6s %-6s %14s %14s %8s %12s %12s %s\n' batch ranks lemrt_samples/s torch_samples/s ratio \
  lemrt_loss torch_loss lemrt_pipelining
results=()
for b in $BATCHES; do
  for w in $RANKS; do
    tag="b${b}_w${w}"
    pipe=""
    [ $(( w * 2 )) -gt "$(nproc)" ] && pipe="sparse_core { disable_full_embedding_pipelining: true }"
    mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -np "$w" \
      "$BUILD/bin/lemrt_train" \
      --config="$LEMRT_ROOT/examples/configs/criteo_kaggle_shape.pbtxt" \
      --override="data { criteo { train_path: '$DATA' } } training { global_batch: $b steps: $STEPS log_every: 1 } $pipe" \
      --summary_json="$OUT/lemrt_$tag.json" --metrics_csv="$OUT/lemrt_$tag.csv" \
      > "$OUT/lemrt_$tag.log" 2>&1 || { cat "$OUT/lemrt_$tag.log"; exit 1; }
    "$PY" "$LEMRT_ROOT/scripts/torch_dlrm.py" --data "$DATA" --batch "$b" --steps "$STEPS" \
      --ranks "$w" --loss_csv "$OUT/torch_$tag.csv" > "$OUT/torch_$tag.log" 2>&1 \
      || { cat "$OUT/torch_$tag.log"; exit 1; }
    "$PY" - "$b" "$w" "$OUT/lemrt_$tag.json" "$OUT/lemrt_$tag.csv" "$OUT/torch_$tag.log" \
      "$OUT/torch_$tag.csv" <<'PY'
import csv, json, sys
b, w, lj, lc, tl, tc = sys.argv[1:]
ls = json.load(open(lj))["samples_per_sec"]
ts = float([l for l in open(tl) if l.startswith("samples/s")][-1].split()[1])
lrows = list(csv.DictReader(open(lc)))
llos = [float(r["loss"]) for r in lrows]
tlos = [float(r["loss"]) for r in csv.DictReader(open(tc))]
tail = lambda v: sum(v[-10:]) / len(v[-10:])
pipelining = json.load(open(lj)).get("pipelining", "?")
print(f"{b:<6} {w:<6} {ls:14.0f} {ts:14.0f} {ls / ts:8.2f} {tail(llos):12.4f} {tail(tlos):12.4f}"
      f" {pipelining}")
with open(lc.replace(".csv", "_curves.txt"), "w") as f:
    f.write("step lemrt_loss torch_loss\n")
    for i in range(min(len(llos), len(tlos))):
        f.write(f"{i + 1} {llos[i]:.5f} {tlos[i]:.5f}\n")
PY
  done
done
echo
echo "loss columns: mean of the last 10 steps; per-step curves: $OUT/lemrt_b*_w*_curves.txt"
for f in "$OUT"/lemrt_b*_w*_curves.txt; do
  echo "== $(basename "$f") (every 10th step)"
  awk 'NR == 1 || (NR - 1) % 10 == 0' "$f"
done
