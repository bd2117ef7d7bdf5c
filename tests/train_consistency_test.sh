#!/usr/bin/env bash
# End to end through mpirun: the same config trained on 1 and on 4 ranks
# agrees (params_l2 and eval logloss within a relative 1e-4 after 50 steps),
# and the same config run twice on the same world size gives the same
# model_checksum. Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"

# Pipelining set: left unset, lemrt_train chooses it from each rank's cores,
# which differ between 1 and 4 ranks on a small machine.
train() {  # train NP NAME
  timeout 300 mpirun --oversubscribe --bind-to none -np "$1" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override='sparse_core { disable_full_embedding_pipelining: false }' \
    --summary_json="$work/$2.json" > "$work/$2.log" 2>&1 \
    || { cat "$work/$2.log"; echo "FAILED: lemrt_train on $1 ranks"; exit 1; }
}
train 1 np1
train 4 np4
train 2 np2a
train 2 np2b

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
s = {n: json.load(open(f"{w}/{n}.json")) for n in ["np1", "np4", "np2a", "np2b"]}
fails = []
def rel(a, b): return abs(a - b) / max(abs(a), abs(b), 1e-30)
for key, get in [("params_l2", lambda j: j["params_l2"]),
                 ("eval.logloss", lambda j: j["eval"]["logloss"])]:
    a, b = get(s["np1"]), get(s["np4"])
    print(f"{key}: 1 rank {a!r}  4 ranks {b!r}  rel diff {rel(a, b):.2e}")
    if rel(a, b) > 1e-4: fails.append(f"{key} differs between 1 and 4 ranks")
for n in s:
    if s[n]["steps"] != 50: fails.append(f"{n}: steps {s[n]['steps']}")
if s["np1"]["world_size"] != 1 or s["np4"]["world_size"] != 4: fails.append("world_size wrong")
a, b = s["np2a"]["model_checksum"], s["np2b"]["model_checksum"]
print(f"model_checksum on 2 ranks: {a} {b}")
if a != b or len(a) != 16: fails.append("model_checksum differs between two identical runs")
if s["np1"]["ids"]["total"] != s["np4"]["ids"]["total"]: fails.append("ids.total differs")
if not s["np1"]["eval"]["samples"] > 0: fails.append("no eval samples")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("1 passed, 0 failed")
PY
