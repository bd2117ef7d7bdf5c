#!/usr/bin/env bash
# Checkpoints end to end through mpirun:
#  - a run resumed from its step-20 checkpoint on the same world size reaches
#    the uninterrupted run's model_checksum (same checkpoint schedule, since
#    with pipelining a checkpoint is a drain point);
#  - the final checkpoint saved on 4 ranks restores on 1, 2 and 3 ranks with
#    the saved model_checksum (re-sharded), and training continues on 3 ranks
#    to the same params_l2 (relative 1e-4) as the 4-rank run, and on 2 ranks x
#    8 SparseCores (the same 16 in all) to the 4-rank run's model_checksum,
#    bit for bit (training.world_size_independent, set for every run here;
#    docs/architecture.md);
#  - lemrt_ckpt import of exported rows keeps the checkpoint byte for byte,
#    imported rows are what 1 and 2 ranks restore, and bad .npy files are
#    refused;
#  - a corrupted, truncated or missing file, a manifest that does not match
#    the config, and an empty directory are clear errors naming the problem,
#    and the checkpoint files are left untouched.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"

# World-size-independent sums for every run (as the config's own field).
cp "$config" "$work/config.pbtxt"
# Blocks of 16 of the 192-sample batch: whole blocks on 1, 2, 3 and 4 ranks.
sed -i 's/^  seed: 7$/  seed: 7 world_size_independent: true gradient_block_samples: 16/' "$work/config.pbtxt"
grep -q 'world_size_independent: true' "$work/config.pbtxt" || { echo "FAILED: config edit"; exit 1; }
config="$work/config.pbtxt"
train() {  # train NP NAME ARGS...: must succeed
  local np="$1" name="$2"; shift 2
  timeout 300 mpirun --oversubscribe --bind-to none -np "$np" "$LEMRT_BIN/lemrt_train" \
    --config="${CONFIG:-$config}" --summary_json="$work/$name.json" "$@" > "$work/$name.log" 2>&1 \
    || { cat "$work/$name.log"; echo "FAILED: lemrt_train $name on $np ranks"; exit 1; }
}
fails=0
expect_error() {  # expect_error NP NAME PATTERN ARGS...: must fail with PATTERN in its error
  local np="$1" name="$2" pattern="$3"; shift 3
  if timeout 300 mpirun --oversubscribe --bind-to none -np "$np" "$LEMRT_BIN/lemrt_train" \
       --config="${CONFIG:-$config}" "$@" > "$work/$name.log" 2>&1; then
    echo "FAILED: $name: lemrt_train succeeded"; fails=$((fails + 1)); return
  fi
  if ! grep -q -- "$pattern" "$work/$name.log"; then
    echo "FAILED: $name: no '$pattern' in:"; grep "error" "$work/$name.log" | head -3
    fails=$((fails + 1)); return
  fi
  echo "ok: $name: $(grep -m1 'lemrt_train: error' "$work/$name.log")"
}
checksum() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['$2'])" "$1"; }

ck="$work/ck"
train 4 full --checkpoint_dir="$ck" --checkpoint_every=20
for s in 00000020 00000040 00000050; do
  [[ -f "$ck/step-$s/manifest.pbtxt" ]] || { echo "FAILED: no checkpoint step-$s"; exit 1; }
done
train 4 resumed --restore_from="$ck/step-00000020" --checkpoint_dir="$work/ck2" --checkpoint_every=20
for n in 1 3; do train "$n" reshard$n --restore_from="$ck"; done
# The 2-rank restore also saves: a checkpoint of the same model on N = 8.
train 2 reshard2 --restore_from="$ck" --checkpoint_dir="$work/ck_r2"
train 3 continue3 --restore_from="$ck/step-00000020"
# The same checkpoint schedule as the 4-rank run: with pipelining a
# checkpoint is a drain point.
train 2 continue2 --restore_from="$ck/step-00000020" --override='topology { sparse_cores_per_chip: 8 }' \
  --checkpoint_dir="$work/ck_c2" --checkpoint_every=20
# Each restored what it was given (a run that trained from step 0 instead
# would reach the same checksums: training is deterministic).
source "$LEMRT_SRC/tests/summary_lib.sh"
for name in resumed continue3 continue2; do expect_resumed "$work/$name.log" "$work/$name.json" 20; done
for n in 1 2 3; do expect_resumed "$work/reshard$n.log" "$work/reshard$n.json" 50; done

python3 - "$work" "$ck/step-00000050/manifest.pbtxt" <<'PY'
import json, re, sys
w, manifest = sys.argv[1], sys.argv[2]
s = {n: json.load(open(f"{w}/{n}.json"))
     for n in ["full", "resumed", "reshard1", "reshard2", "reshard3", "continue3", "continue2"]}
saved = re.search(r'model_checksum: "([0-9a-f]+)"', open(manifest).read()).group(1)
fails = []
full = s["full"]["model_checksum"]
print(f"uninterrupted 4 ranks {full}; manifest of step 50 {saved}")
if saved != full: fails.append("the final checkpoint's checksum differs from the run's")
print(f"resumed at step 20 on 4 ranks: {s['resumed']['model_checksum']}")
if s["resumed"]["model_checksum"] != full: fails.append("resumed run differs from uninterrupted")
for n in ["reshard1", "reshard2", "reshard3"]:
    print(f"{n}: world {s[n]['world_size']} checksum {s[n]['model_checksum']}")
    if s[n]["model_checksum"] != full: fails.append(f"{n}: restored model differs")
a, b = s["full"]["params_l2"], s["continue3"]["params_l2"]
rel = abs(a - b) / max(abs(a), abs(b))
print(f"continued on 3 ranks from step 20: params_l2 {b!r} vs {a!r} (rel {rel:.1e})")
if rel > 1e-4: fails.append("training continued on 3 ranks diverges")
print(f"continued on 2 ranks x 8 SparseCores from step 20: {s['continue2']['model_checksum']}")
if s["continue2"]["model_checksum"] != full:
    fails.append("training continued on 2 ranks x 8 SparseCores differs from the 4-rank run")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
PY

# lemrt_ckpt: inspect, verify, and export to .npy, checked against the raw
# records of the table files (row j = record j / N of file j % N) and against
# the export of the same model saved on 2 ranks.
"$LEMRT_BIN/lemrt_ckpt" inspect "$ck" > "$work/inspect.txt"
grep -q "^step *50 " "$work/inspect.txt" && grep -q "4 ranks x 4 SparseCores" "$work/inspect.txt" \
  || { cat "$work/inspect.txt"; echo "FAILED: inspect"; exit 1; }
"$LEMRT_BIN/lemrt_ckpt" verify "$ck/step-00000020"
"$LEMRT_BIN/lemrt_ckpt" export "$ck" --table=c --out="$work/c4.npy"
"$LEMRT_BIN/lemrt_ckpt" export "$work/ck_r2" --table=c --out="$work/c2.npy"
"$LEMRT_BIN/lemrt_ckpt" export "$ck" --table=c --slots --out="$work/c4_slots.npy"
python3 - "$work" "$ck/step-00000050" <<'PY'
import ast, struct, sys
w, step_dir = sys.argv[1], sys.argv[2]
def load_npy(path):
    b = open(path, "rb").read()
    assert b[:8] == b"\x93NUMPY\x01\x00", "bad npy magic"
    n = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + n].decode())
    assert h["descr"] == "<f4" and not h["fortran_order"], h
    rows, cols = h["shape"]
    return rows, cols, b[10 + n:]
rows, cols, data = load_npy(f"{w}/c4.npy")
assert (rows, cols) == (3000, 32), (rows, cols)
assert len(data) == rows * cols * 4
assert load_npy(f"{w}/c2.npy")[2] == data, "export differs between 4-rank and 2-rank saves"
_, scols, sdata = load_npy(f"{w}/c4_slots.npy")
assert scols == 32  # adagrad: one slot per parameter
rb = 8 + 4 * 32 * 2
for j in [0, 1, 15, 16, 17, 1234, 2999]:
    raw = open(f"{step_dir}/table-002-sc-{j % 16:05d}.bin", "rb").read()
    rec = raw[(j // 16) * rb:(j // 16 + 1) * rb]
    assert struct.unpack("<q", rec[:8])[0] == j
    assert rec[8:8 + 128] == data[j * 128:(j + 1) * 128], f"row {j} differs"
    assert rec[8 + 128:] == sdata[j * 128:(j + 1) * 128], f"slots of row {j} differ"
vals = struct.unpack(f"<{rows * cols}f", data)
assert all(v == v for v in vals) and any(v != 0 for v in vals)
print("ok: export of table c matches the raw records and the 2-rank save")
PY

# lemrt_ckpt import: export -> import of table c leaves the checkpoint
# byte for byte; imported rows (changed) are what lemrt_train restores on 1
# and 2 ranks (their saves export the imported rows); bad files are refused
# with sentences naming them, leaving the checkpoint unchanged.
imp="$work/imp"
mkdir -p "$imp" && cp -r "$ck/step-00000050" "$imp/"
"$LEMRT_BIN/lemrt_ckpt" import "$imp" --table=c --npy="$work/c4.npy" > "$work/import.log"
diff -r "$ck/step-00000050" "$imp/step-00000050" || { echo "FAILED: export -> import changed the checkpoint"; exit 1; }
python3 - "$work" <<'PY'
import struct, sys
w = sys.argv[1]
b = open(f"{w}/c4.npy", "rb").read()
n = 10 + struct.unpack("<H", b[8:10])[0]
vals = [((i * 7919) % 1000) / 512.0 - 1.0 for i in range(3000 * 32)]
open(f"{w}/c_new.npy", "wb").write(b[:n] + struct.pack(f"<{len(vals)}f", *vals))
bad = list(vals); bad[5 * 32 + 3] = float("nan")
open(f"{w}/c_nan.npy", "wb").write(b[:n] + struct.pack(f"<{len(bad)}f", *bad))
h = b[10:n].replace(b"<f4", b"<f8")
open(f"{w}/c_f8.npy", "wb").write(b[:10] + h + struct.pack(f"<{len(vals)}d", *vals))
PY
"$LEMRT_BIN/lemrt_ckpt" import "$imp" --table=c --npy="$work/c_new.npy" > "$work/import.log"
imported="$(sed -n 's/.*model checksum \([0-9a-f]*\).*/\1/p' "$work/import.log")"
[[ -n "$imported" && "$imported" != "$(checksum "$work/full.json" model_checksum)" ]] \
  || { cat "$work/import.log"; echo "FAILED: import did not change the model checksum"; exit 1; }
for n in 1 2; do
  train "$n" imported$n --restore_from="$imp" --checkpoint_dir="$work/imp_r$n"
  [[ "$(checksum "$work/imported$n.json" model_checksum)" == "$imported" ]] \
    || { echo "FAILED: restore on $n ranks: not the imported model"; exit 1; }
  "$LEMRT_BIN/lemrt_ckpt" export "$work/imp_r$n" --table=c --out="$work/c_back$n.npy"
  cmp "$work/c_new.npy" "$work/c_back$n.npy" || { echo "FAILED: $n ranks restored other rows"; exit 1; }
done
echo "ok: imported rows of table c restore on 1 and 2 ranks (model checksum $imported)"
"$LEMRT_BIN/lemrt_ckpt" export "$ck" --table=b --out="$work/b4.npy"
imp_sum="$(cat "$imp"/step-00000050/* | md5sum)"
import_error() {  # import_error TABLE NPY PATTERN: must fail with PATTERN
  if "$LEMRT_BIN/lemrt_ckpt" import "$imp" --table="$1" --npy="$2" > "$work/import.log" 2>&1 \
     || ! grep -q -- "$3" "$work/import.log"; then
    cat "$work/import.log"; echo "FAILED: import of $2 into '$1'"; fails=$((fails + 1)); return
  fi
  echo "ok: $(cat "$work/import.log")"
}
import_error c "$work/b4.npy" "b4.npy' has shape (5000, 8), table 'c' needs (3000, 32)"
import_error c "$work/c_f8.npy" "c_f8.npy' has dtype '<f8', expected '<f4'"
import_error c "$work/c_nan.npy" "c_nan.npy' holds a non-finite value: row 5 column 3 is nan"
import_error d "$work/c_new.npy" "has no table 'd'; it has: a, b, c"
[[ "$(cat "$imp"/step-00000050/* | md5sum)" == "$imp_sum" ]] || { echo "FAILED: a refused import changed files"; fails=$((fails + 1)); }

# bf16 tables (rows and Adagrad slots): the checkpoint stores bf16 records
# (manifest dtype "bf16"), restores into an FP32 config on another world size
# with the same model_checksum (widening is exact) and into BF16 on a third;
# the fp32 checkpoint restores into BF16 (rounded to nearest: close, not
# equal); export writes fp32 whose values are the stored bf16 ones.
bf16_config="$work/bf16.pbtxt"
sed -e 's/^\(tables {.*\) }$/\1 dtype: BF16 slot_dtype: BF16 }/' "$config" > "$bf16_config"
CONFIG="$bf16_config" train 2 bf16 --checkpoint_dir="$work/ckb"
train 1 bf16_to_fp32 --restore_from="$work/ckb"
CONFIG="$bf16_config" train 3 bf16_reshard --restore_from="$work/ckb"
CONFIG="$bf16_config" train 1 fp32_to_bf16 --restore_from="$ck"
"$LEMRT_BIN/lemrt_ckpt" export "$work/ckb" --table=c --out="$work/cb.npy"
python3 - "$work" "$work/ckb/step-00000050" <<'PY'
import ast, json, struct, sys
w, step_dir = sys.argv[1], sys.argv[2]
s = {n: json.load(open(f"{w}/{n}.json")) for n in ["bf16", "bf16_to_fp32", "bf16_reshard", "fp32_to_bf16", "full"]}
fails = []
manifest = open(f"{step_dir}/manifest.pbtxt").read()
import re
if len(re.findall(r'^\s*dtype: "bf16"', manifest, re.M)) != 3 or manifest.count('slot_dtype: "bf16"') != 3:
    fails.append("manifest lacks dtype / slot_dtype bf16 for the 3 tables")
for n in ["bf16_to_fp32", "bf16_reshard"]:
    print(f"{n}: world {s[n]['world_size']} checksum {s[n]['model_checksum']} (saved {s['bf16']['model_checksum']})")
    if s[n]["model_checksum"] != s["bf16"]["model_checksum"]: fails.append(f"{n}: restored model differs")
a, b = s["full"]["params_l2"], s["fp32_to_bf16"]["params_l2"]
print(f"fp32 -> bf16: params_l2 {b!r} vs {a!r}")
if abs(a - b) > 1e-2 * a or s["fp32_to_bf16"]["model_checksum"] == s["full"]["model_checksum"]:
    fails.append("fp32 -> bf16 restore: not the rounded model")
b = open(f"{w}/cb.npy", "rb").read()
n = struct.unpack("<H", b[8:10])[0]
h = ast.literal_eval(b[10:10 + n].decode())
if h["descr"] != "<f4" or h["shape"] != (3000, 32): fails.append(f"export header {h}")
words = struct.unpack(f"<{3000 * 32}I", b[10 + n:])
if any(x & 0xffff for x in words) or not any(words): fails.append("export values are not bf16 values")
rb = 8 + 2 * 32 * 2  # row, 32 bf16 weights, 32 bf16 slots; 4 x 2 = 8 files
for j in [0, 1, 7, 8, 2999]:
    raw = open(f"{step_dir}/table-002-sc-{j % 8:05d}.bin", "rb").read()[(j // 8) * rb:(j // 8 + 1) * rb]
    if struct.unpack("<q", raw[:8])[0] != j or list(struct.unpack("<32H", raw[8:72])) != [x >> 16 for x in words[j * 32:(j + 1) * 32]]:
        fails.append(f"row {j}: export differs from the bf16 record")
if fails:
    print("FAILED:", "; ".join(fails)); sys.exit(1)
print("ok: bf16 checkpoints store bf16, convert on restore, export fp32")
PY

# Error cases on a copy; the copy's bytes must not change.
bad="$work/bad"
cp -r "$ck/step-00000050" "$bad"
file="$bad/table-001-sc-00005.bin"
cp "$file" "$work/orig.bin"
python3 - "$file" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[12] ^= 0x01
open(sys.argv[1], "wb").write(b)
PY
sum_before="$(cat "$bad"/* | md5sum)"
if "$LEMRT_BIN/lemrt_ckpt" verify "$bad" > "$work/verify.log" 2>&1 \
   || ! grep -q "table-001-sc-00005.bin' is corrupted" "$work/verify.log"; then
  cat "$work/verify.log"; echo "FAILED: lemrt_ckpt verify missed the corruption"; fails=$((fails + 1))
fi
expect_error 2 corrupted "table-001-sc-00005.bin' is corrupted" --restore_from="$bad"
[[ "$(cat "$bad"/* | md5sum)" == "$sum_before" ]] || { echo "FAILED: restore changed files"; fails=$((fails + 1)); }
head -c 100 "$work/orig.bin" > "$file"
expect_error 3 truncated "table-001-sc-00005.bin' is truncated" --restore_from="$bad"
rm "$file"
expect_error 2 missing "table-001-sc-00005.bin' is missing" --restore_from="$bad"
cp "$work/orig.bin" "$file"
train 2 repaired --restore_from="$bad"
expect_error 2 batch_mismatch "training.global_batch is 192 in the checkpoint, 96" \
  --restore_from="$bad" --override='training { global_batch: 96 }'
sed 's/vocab_size: 5000  dim: 8/vocab_size: 5000 dim: 4/' "$config" > "$work/dim4.pbtxt"
CONFIG="$work/dim4.pbtxt" expect_error 2 dim_mismatch "table 'b' has dim 8 in the checkpoint, 4 in the config" \
  --restore_from="$bad"
mkdir -p "$work/empty/step-00000070"
expect_error 2 empty "no intact checkpoint in '$work/empty'; tried '$work/empty/step-00000070': .*manifest.pbtxt' is missing" \
  --restore_from="$work/empty"
rmdir "$work/empty/step-00000070"
expect_error 2 empty_dir "no checkpoint in '$work/empty'" --restore_from="$work/empty"
expect_error 1 every_without_dir "checkpoint.every_steps" --checkpoint_every=5
if (( fails > 0 )); then echo "FAILED: $fails error case(s)"; exit 1; fi
echo "1 passed, 0 failed"
