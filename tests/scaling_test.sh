#!/usr/bin/env bash
# scripts/scaling.sh and scripts/scaling_model.py on a tiny run:
# weak and strong scaling on 1 and 2 ranks write a CSV whose rows match the
# runs' summaries, and the model predicts 8..4096 chips with an exchange
# share that grows with the chips. Needs LEMRT_BIN and LEMRT_SRC.
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bash "$LEMRT_SRC/scripts/scaling.sh" --config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" \
  --ranks="1 2" --steps=3 --batch_per_chip=96 --global_batch=192 --out="$work" --bin="$LEMRT_BIN"
python3 "$LEMRT_SRC/scripts/scaling_model.py" --summary="$work/weak_np1.json" \
  --config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" --out="$work/model.csv"
python3 - "$work" <<'PY'
import csv, json, sys
w = sys.argv[1]
rows = list(csv.DictReader(open(f"{w}/scaling.csv")))
fails = []
if [(r["mode"], r["world_size"]) for r in rows] != [("weak", "1"), ("weak", "2"), ("strong", "1"), ("strong", "2")]:
    fails.append(f"unexpected rows {[(r['mode'], r['world_size']) for r in rows]}")
for r in rows:
    s = json.load(open(f"{w}/{r['mode']}_np{r['world_size']}.json"))
    if abs(float(r["samples_per_sec"]) - s["samples_per_sec"]) > 0.1: fails.append("samples/s differs")
    if int(r["global_batch"]) != (96 * int(r["world_size"]) if r["mode"] == "weak" else 192):
        fails.append(f"global batch {r['global_batch']} for {r['mode']} {r['world_size']}")
    if not float(r["exchange_bytes_per_chip"]) > 0: fails.append("no exchange bytes")
    if r["world_size"] == "1" and float(r["efficiency"]) != 1.0: fails.append("1-rank efficiency != 1")
m = list(csv.DictReader(open(f"{w}/model.csv")))
chips = [int(r["chips"]) for r in m]
share = [float(r["exchange_share"]) for r in m]
if chips[0] != 8 or chips[-1] != 4096: fails.append(f"model chips {chips}")
if share != sorted(share) or share[-1] <= share[0]: fails.append(f"exchange share not growing: {share}")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("1 passed, 0 failed")
PY
