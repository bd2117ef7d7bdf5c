#!/usr/bin/env bash
# lemrt against PyTorch on the Criteo Kaggle DLRM shape (26 tables x 100,000
# rows, dim 16, one id per feature, bottom 13-512-256-64-16, top 512-256-1,
# SGD lr 0.1), at batches 128 and 1024 on 1 and 2 ranks:
#
#   lemrt       examples/configs/criteo_kaggle_shape.pbtxt, launched with its
#               default threads (lemrt_train picks them from the cores each
#               rank owns), on one synthetic Criteo TSV (gen_criteo_tsv.py);
#   torch       scripts/torch_dlrm.py: the same model, data and init scheme in
#               plain PyTorch, so the two loss curves can be compared;
#   torchrec    scripts/torchrec_dlrm.py: that model with its tables in one
#               TorchRec EmbeddingBagCollection on FBGEMM's CPU kernels with
#               the SGD fused into the backward pass (DistributedModelParallel,
#               TorchRec's planner), same init and data, when TorchRec is
#               installed (scripts/install_torchrec.sh, opt-in; else skipped);
#   reference   the public reference DLRM (facebookresearch/dlrm's
#               dlrm_s_pytorch.py, unchanged) on the same shapes and batches
#               with its own random data, when DLRM_REFERENCE names a checkout
#               of it (run from a copy; this project contains none of its code).
#
# Each (batch, ranks) setting runs ROUNDS rounds, and in each round the
# programs run one after another, so a change of the machine's load hits all
# of them; the table gives medians over the rounds and the median of the
# per-round ratios (with their range). Not part of ctest (minutes).
#
#   scripts/compare_torch.sh                 # builds build/ first
#   DLRM_REFERENCE=../shared/peers/facebookresearch-dlrm ROUNDS=3 scripts/compare_torch.sh
#
# Env: LEMRT_BUILD (build dir, default build), STEPS (default 100), BATCHES
# (default "128 1024"), RANKS (default "1 2"), ROUNDS (default 3), OUT
# (default out/torch), PYTHON (default /usr/bin/python3, where Debian's torch
# lives), DLRM_REFERENCE (unset: the reference DLRM is skipped),
# TORCHREC_PYTHON (default: the environment scripts/install_torchrec.sh made;
# "none" skips TorchRec).
set -euo pipefail
source "$(dirname "$0")/env.sh"
lemrt_no_args "$@"
lemrt_positive_int STEPS "${STEPS:-100}"; lemrt_positive_int ROUNDS "${ROUNDS:-3}"
for v in ${BATCHES:-128 1024}; do lemrt_positive_int "every BATCHES entry" "$v"; done
for v in ${RANKS:-1 2}; do lemrt_positive_int "every RANKS entry" "$v"; done
"$LEMRT_ROOT/scripts/install_torch.sh"
BUILD="${LEMRT_BUILD:-$LEMRT_ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$LEMRT_ROOT/$BUILD"
STEPS="${STEPS:-100}"
BATCHES="${BATCHES:-128 1024}"
RANKS="${RANKS:-1 2}"
ROUNDS="${ROUNDS:-3}"
OUT="${OUT:-$LEMRT_ROOT/out/torch}"
# Debian's interpreter, where python3-torch is installed (not a pyenv/venv one).
PY="${PYTHON:-/usr/bin/python3}"
mkdir -p "$OUT"
if [ ! -x "$BUILD/bin/lemrt_train" ]; then lemrt_build "$BUILD"; fi

# TorchRec's python: the install script's environment, checked (it installs
# nothing with --python).
TRPY="${TORCHREC_PYTHON:-}"
if [ -z "$TRPY" ]; then
  TRPY=$("$LEMRT_ROOT/scripts/install_torchrec.sh" --python) || {
    TRPY=none
    echo "compare_torch: TorchRec is not installed (scripts/install_torchrec.sh): its column is skipped"
  }
fi
[ "$TRPY" = none ] && TRPY=""

REF=""
if [ -n "${DLRM_REFERENCE:-}" ]; then
  [ -f "$DLRM_REFERENCE/dlrm_s_pytorch.py" ] ||
    { echo "compare_torch: DLRM_REFERENCE=$DLRM_REFERENCE has no dlrm_s_pytorch.py"; exit 1; }
  REF="$(mktemp -d)"
  trap 'rm -rf "$REF"' EXIT
  cp -r "$DLRM_REFERENCE/." "$REF/"
  # Debian has no tensorboard package: a no-op torch.utils.tensorboard, then
  # the script unchanged with the given argv.
  cat > "$REF/lemrt_launch.py" <<'PY'
import os, runpy, sys, types
tb = types.ModuleType("torch.utils.tensorboard")
class SummaryWriter:
    def __init__(self, *a, **k): pass
    def add_scalar(self, *a, **k): pass
    def close(self): pass
tb.SummaryWriter = SummaryWriter
sys.modules["torch.utils.tensorboard"] = tb
script = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.dirname(script))
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
PY
fi

max_batch=0
for b in $BATCHES; do [ "$b" -gt "$max_batch" ] && max_batch=$b; done
DATA="$OUT/criteo_synth.tsv"
lines=$(( max_batch * STEPS * 11 / 10 + 1024 ))
if [ ! -f "$DATA" ] || [ "$(wc -l < "$DATA")" -lt "$lines" ]; then
  "$PY" "$LEMRT_ROOT/scripts/gen_criteo_tsv.py" --lines "$lines" --out "$DATA"
fi

run_lemrt() {  # run_lemrt BATCH RANKS TAG
  mpirun --bind-to none -np "$2" "$BUILD/bin/lemrt_train" \
    --config="$LEMRT_ROOT/examples/configs/criteo_kaggle_shape.pbtxt" \
    --override="data { criteo { train_path: '$DATA' } } training { global_batch: $1 steps: $STEPS log_every: 1 }" \
    --summary_json="$OUT/lemrt_$3.json" --metrics_csv="$OUT/lemrt_$3.csv" \
    > "$OUT/lemrt_$3.log" 2>&1 || { cat "$OUT/lemrt_$3.log"; exit 1; }
  "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['samples_per_sec'])" \
    "$OUT/lemrt_$3.json"
}

run_torch() {  # run_torch BATCH RANKS TAG
  "$PY" "$LEMRT_ROOT/scripts/torch_dlrm.py" --data "$DATA" --batch "$1" --steps "$STEPS" \
    --ranks "$2" --loss_csv "$OUT/torch_$3.csv" > "$OUT/torch_$3.log" 2>&1 \
    || { cat "$OUT/torch_$3.log"; exit 1; }
  grep '^samples/s' "$OUT/torch_$3.log" | tail -1 | awk '{print $2}'
}

run_torchrec() {  # run_torchrec BATCH RANKS TAG
  "$TRPY" "$LEMRT_ROOT/scripts/torchrec_dlrm.py" --data "$DATA" --batch "$1" --steps "$STEPS" \
    --ranks "$2" --loss_csv "$OUT/torchrec_$3.csv" > "$OUT/torchrec_$3.log" 2>&1 \
    || { cat "$OUT/torchrec_$3.log"; exit 1; }
  grep '^samples/s' "$OUT/torchrec_$3.log" | tail -1 | awk '{print $2}'
}

# The reference's own command line for the same shapes; --mini-batch-size is
# the global batch (split over the ranks). Samples/s from its ms/it over the
# print windows after the first (which holds the warm-up).
run_reference() {  # run_reference BATCH RANKS TAG
  local emb freq args
  emb=$("$PY" -c "print('-'.join(['100000'] * 26))")
  freq=$(( STEPS / 5 > 0 ? STEPS / 5 : 1 ))
  args=(--data-generation=random --arch-sparse-feature-size=16 --arch-mlp-bot=13-512-256-64-16
        --arch-mlp-top=512-256-1 --arch-embedding-size="$emb" --num-indices-per-lookup=1
        --num-indices-per-lookup-fixed=True --loss-function=bce --round-targets=True
        --learning-rate=0.1 --print-time --numpy-rand-seed=727 --mini-batch-size="$1"
        --num-batches="$STEPS" --print-freq="$freq")
  if [ "$2" = 1 ]; then
    (cd "$REF" && "$PY" lemrt_launch.py dlrm_s_pytorch.py "${args[@]}") > "$OUT/ref_$3.log" 2>&1
  else
    (cd "$REF" && mpirun --bind-to none -np "$2" -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
       -x MASTER_PORT=29535 "$PY" lemrt_launch.py dlrm_s_pytorch.py "${args[@]}") \
       > "$OUT/ref_$3.log" 2>&1
  fi || { cat "$OUT/ref_$3.log"; exit 1; }
  "$PY" - "$1" "$OUT/ref_$3.log" <<'PY'
import re, statistics, sys
ms = [float(m) for m in re.findall(r"Finished training it \d+/\d+ of epoch \d+, ([\d.]+) ms/it",
                                   open(sys.argv[2]).read())]
if not ms:
    sys.exit(f"{sys.argv[2]}: no 'ms/it' line")
ms = ms[1:] or ms
print(int(sys.argv[1]) * 1000.0 / statistics.median(ms))
PY
}

printf '\n%-6s %-6s %10s %10s %10s %10s %14s %14s %14s %11s %11s %11s %s\n' batch ranks lemrt \
  torch torchrec reference "lemrt/torch" "lemrt/torchrec" "lemrt/ref" lemrt_loss torch_loss \
  trec_loss "pipelining/gemm_threads"
for b in $BATCHES; do
  for w in $RANKS; do
    tag="b${b}_w${w}"
    : > "$OUT/rounds_$tag.txt"
    for r in $(seq 1 "$ROUNDS"); do
      l=$(run_lemrt "$b" "$w" "$tag")
      t=$(run_torch "$b" "$w" "$tag")
      c=0
      [ -n "$TRPY" ] && c=$(run_torchrec "$b" "$w" "$tag")
      f=0
      [ -n "$REF" ] && f=$(run_reference "$b" "$w" "$tag")
      echo "$l $t $c $f $(uptime | sed 's/.*average: //; s/,.*//')" >> "$OUT/rounds_$tag.txt"
    done
    "$PY" - "$b" "$w" "$OUT/rounds_$tag.txt" "$OUT/lemrt_$tag.json" "$OUT/lemrt_$tag.csv" \
      "$OUT/torch_$tag.csv" "$OUT/torchrec_$tag.csv" <<'PY'
import csv, json, statistics as st, sys
b, w, rounds, lj, lc, tc, cc = sys.argv[1:]
rows = [list(map(float, l.split())) for l in open(rounds) if l.strip()]
med = lambda v: st.median(v)
lem, tor, rec, ref = ([r[i] for r in rows] for i in range(4))
per = lambda other: [l / o for l, o in zip(lem, other) if o > 0]
rt, rc, rr = per(tor), per(rec), per(ref)
ratio = lambda v: f"{med(v):.2f} ({min(v):.2f}-{max(v):.2f})" if v else "-"
loss = lambda path: [float(r["loss"]) for r in csv.DictReader(open(path))]
llos, tlos = loss(lc), loss(tc)
clos = loss(cc) if rc else []
tail = lambda v: f"{sum(v[-10:]) / len(v[-10:]):11.4f}" if v else f"{'-':>11}"
s = json.load(open(lj))
threads = f"{'on' if s.get('pipelining') else 'off'}/{s.get('threads', {}).get('gemm_threads', '?')}"
print(f"{b:<6} {w:<6} {med(lem):10.0f} {med(tor):10.0f} {med(rec) if rc else 0:10.0f} "
      f"{med(ref) if rr else 0:10.0f} {ratio(rt):>14} {ratio(rc):>14} {ratio(rr):>14} "
      f"{tail(llos)} {tail(tlos)} {tail(clos)} {threads}"
      f"   load {min(r[4] for r in rows):.1f}-{max(r[4] for r in rows):.1f}")
with open(lc.replace(".csv", "_curves.txt"), "w") as f:
    f.write("step lemrt_loss torch_loss" + (" torchrec_loss" if clos else "") + "\n")
    for i in range(min(len(llos), len(tlos))):
        f.write(f"{i + 1} {llos[i]:.5f} {tlos[i]:.5f}" +
                (f" {clos[i]:.5f}" if i < len(clos) else "") + "\n")
PY
  done
done
echo
echo "samples/s: medians over $ROUNDS rounds; ratios: median (range) of the per-round ratios;"
echo "loss columns: mean of the last 10 steps (trec: TorchRec); per-step curves: $OUT/lemrt_b*_w*_curves.txt"
for f in "$OUT"/lemrt_b*_w*_curves.txt; do
  echo "== $(basename "$f") (every 10th step)"
  awk 'NR == 1 || (NR - 1) % 10 == 0' "$f"
done
