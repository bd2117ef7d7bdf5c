#!/usr/bin/env bash
# The hostile-input suite, table-driven (issue 33): every line of
# tests/fault_hostile_cases.txt is one case,
#
#   NAME @@ EXIT @@ SECONDS @@ WORDS @@ COMMAND
#
# COMMAND (bash, run in a fresh directory with the helpers below) must end
# with exit status EXIT ("!0": any failure; never 124, the timeout's) within
# SECONDS (times LEMRT_TEST_TIME_SCALE), and its output (stdout and stderr)
# must match the extended regular expression WORDS. Adding a case is one
# line. Cases run LEMRT_TEST_JOBS (default 2) at a time. Needs LEMRT_BIN and
# LEMRT_SRC; `fault_hostile.sh CASES_FILE [NAME_REGEX]` runs a subset.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
cases_file="${1:-$LEMRT_SRC/tests/fault_hostile_cases.txt}"
only="${2:-.}"
w="$(mktemp -d)"
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$w"' EXIT
scale="${LEMRT_TEST_TIME_SCALE:-1}"
jobs_max="${LEMRT_TEST_JOBS:-2}"
fx="$w/fx"  # shared fixtures, read-only to the cases
mkdir -p "$fx" "$w/res"

# --- The helpers every case sees (written to a file each case sources).
cat > "$w/helpers.sh" <<EOF
fx="$fx"
bin="$LEMRT_BIN"
small="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
mh="$LEMRT_SRC/examples/configs/multihot_tfrecord.pbtxt"
scripts="$LEMRT_SRC/scripts"
EOF
cat >> "$w/helpers.sh" <<'EOF'
MPI=(mpirun --oversubscribe --bind-to none)
# train OVERRIDE [FLAGS...]: the small DLRM (synthetic data) on one rank, 3 steps.
train() {
  local ov="$1"; shift
  "${MPI[@]}" -np 1 "$bin/lemrt_train" --config="$small" \
    --override="training { steps: 3 eval_samples: 192 } $ov" "$@"
}
# train2 OVERRIDE [FLAGS...]: the same on two ranks.
train2() {
  local ov="$1"; shift
  "${MPI[@]}" -np 2 "$bin/lemrt_train" --config="$small" \
    --override="training { steps: 3 eval_samples: 192 } $ov" "$@"
}
# train_mh OVERRIDE [FLAGS...]: the multi-hot model (file data) on one rank, one epoch.
train_mh() {
  local ov="$1"; shift
  "${MPI[@]}" -np 1 "$bin/lemrt_train" --config="${MH_CONFIG:-$mh}" \
    --override="training { epochs: 1 log_every: 0 } $ov" "$@"
}
# mh_sed SED_EXPR...: the multi-hot config edited (c.pbtxt), used by train_mh and predict.
mh_sed() {
  local args=()
  for e in "$@"; do args+=(-e "$e"); done
  sed "${args[@]}" "$mh" > c.pbtxt && MH_CONFIG="$PWD/c.pbtxt"
}
# mpmd OVERRIDE0 OVERRIDE1: two ranks started with different overrides.
mpmd() {
  "${MPI[@]}" -np 1 "$bin/lemrt_train" --config="$small" \
    --override="training { steps: 3 eval_samples: 192 } $1" : \
    -np 1 "$bin/lemrt_train" --config="$small" --override="training { steps: 3 eval_samples: 192 } $2"
}
# predict [FLAGS...]: lemrt_predict of the multi-hot model on one rank.
predict() { "${MPI[@]}" -np 1 "$bin/lemrt_predict" --config="${MH_CONFIG:-$mh}" "$@"; }
ckpt() { "$bin/lemrt_ckpt" "$@"; }
vocab() { "${MPI[@]}" -np 1 "$bin/lemrt_vocab" --config="$mh" "$@"; }
# limits [FLAGS...]: lemrt_limits of the small DLRM (synthetic data) on one rank.
limits() { "${MPI[@]}" -np 1 "$bin/lemrt_limits" --config="$small" "$@"; }
# Data overrides: Criteo TSV for the small model, the multi-hot files.
criteo() { echo "data { criteo { train_path: \"$1\" eval_path: \"${2:-$1}\" } }"; }
criteo_strict() { echo "data { criteo { train_path: \"$1\" strict: true } } training { eval_samples: 0 }"; }
text() { echo "data { text { train_path: \"$1\" eval_path: \"${2:-$1}\" header: true } }"; }
tfrec() { echo "data { tfrecord { train_path: \"$1\" eval_path: \"${2:-$1}\" } }"; }
binary() { echo "data { binary { train_path: \"$1\" } }"; }
# two_members SRC OUT [damage]: SRC (a plain TFRecord file) as two gzip
# members split after record 300; with "damage", the second member's magic
# bytes are zeroed (what zcat calls trailing garbage).
two_members() {
  python3 - "$@" <<'PY'
import gzip, sys
data = open(sys.argv[1], "rb").read()
i = 0
for _ in range(300):
    i += 16 + int.from_bytes(data[i:i + 8], "little")
second = bytearray(gzip.compress(data[i:]))
if len(sys.argv) > 3:
    second[0] = 0
open(sys.argv[2], "wb").write(gzip.compress(data[:i]) + second)
PY
}
# big_tfrecord_gz OUT GIB: a gzip TFRecord file of records of 1 MiB of zeros,
# GIB GiB uncompressed in 20 MiB gzip members (~20 KB each): it takes
# seconds to index, a few to make.
big_tfrecord_gz() {
  python3 - "$scripts" "$@" <<'PY'
import gzip, struct, sys
sys.path.insert(0, sys.argv[1])
from gen_multihot_data import masked_crc
payload = bytes(1 << 20)
length = struct.pack("<Q", len(payload))
record = length + struct.pack("<I", masked_crc(length)) + payload + struct.pack("<I", masked_crc(payload))
member = gzip.compress(record * 20, 9)
with open(sys.argv[2], "wb") as f:
    f.write(member * int(float(sys.argv[3]) * 1024 / 20))
PY
}
# pid_of_rank JOB_PID: the first lemrt_train under the mpirun that the
# background job JOB_PID (a subshell running a helper) started; empty until
# it runs.
pid_of_rank() { pgrep -P "$(pgrep -P "$1" mpirun)" lemrt_train 2>/dev/null | head -n 1; }
# mh_vocab FILE: the multi-hot config with feature 'category' mapped through FILE.
mh_vocab() {
  mh_sed "s|sparse { feature: \"category\" key: \"item_category\" }|sparse { feature: \"category\" key: \"item_category\" mapping: VOCABULARY vocabulary_file: \"$1\" num_oov_buckets: 1 }|"
}
EOF

# --- Fixtures (a few seconds): Criteo TSV, multi-hot TSV and TFRecord
# (plain and gzip), a binary file, a trained checkpoint of each model.
python3 - "$fx" <<'PY'
import sys
fx = sys.argv[1]
with open(f"{fx}/good.tsv", "w") as f:
    for i in range(400):
        ints = [str((i * 7 + k) % 50) for k in range(13)]
        cats = ["%x" % ((i * 2654435761 + c * 40503) % (1 << 32)) for c in range(26)]
        f.write("\t".join([str(i % 2)] + ints + cats) + "\n")
PY
python3 "$LEMRT_SRC/scripts/gen_multihot_data.py" --out "$fx/mh" --train_rows 600 --eval_rows 200 \
  --seed 5 > /dev/null
python3 "$LEMRT_SRC/scripts/gen_multihot_data.py" --out "$fx/mhz" --train_rows 600 --eval_rows 200 \
  --seed 5 --gzip > /dev/null
source "$w/helpers.sh"
(cd "$fx" && train "$(criteo "$fx/good.tsv") training { steps: 2 }" --checkpoint_dir="$fx/ck" \
  > "$fx/ck.log" 2>&1) || { cat "$fx/ck.log"; echo "FAIL fixture: small checkpoint"; exit 1; }
(cd "$fx" && train_mh "$(tfrec "$fx/mh/train.tfrecord" "$fx/mh/eval.tfrecord")" \
  --checkpoint_dir="$fx/mhck" > "$fx/mhck.log" 2>&1) \
  || { cat "$fx/mhck.log"; echo "FAIL fixture: multi-hot checkpoint"; exit 1; }
"$LEMRT_BIN/lemrt_convert" --config="$small" --override="$(criteo "$fx/good.tsv")" \
  --out="$fx/good.bin" > "$fx/bin.log" 2>&1 || { cat "$fx/bin.log"; echo "FAIL fixture: binary"; exit 1; }
chmod -R a-w "$fx"

# run_case N LINE: runs one case, writes its verdict to $w/res/N.
run_case() {
  local n="$1" line="$2"
  local name want secs words cmd
  name="$(awk -F' @@ ' '{print $1}' <<< "$line" | xargs)"
  want="$(awk -F' @@ ' '{print $2}' <<< "$line" | xargs)"
  secs="$(awk -F' @@ ' '{print $3}' <<< "$line" | xargs)"
  words="$(awk -F' @@ ' '{print $4}' <<< "$line")"
  cmd="$(awk -F' @@ ' '{for (i = 5; i <= NF; ++i) printf "%s%s", (i > 5 ? " @@ " : ""), $i}' <<< "$line")"
  local dir="$w/c/$n"
  mkdir -p "$dir"
  local bound=$((secs * scale)) start end rc
  start=$(date +%s%N)
  (cd "$dir" && timeout -k 5 "$bound" bash -c "source '$w/helpers.sh'; $cmd") > "$dir/out" 2>&1
  rc=$?
  end=$(date +%s%N)
  local ms=$(((end - start) / 1000000)) verdict=ok why=""
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    verdict=FAIL; why="timed out after ${bound}s"
  elif [ "$want" = "!0" ] && [ "$rc" -eq 0 ]; then
    verdict=FAIL; why="exit 0, want non-zero"
  elif [ "$want" != "!0" ] && [ "$rc" -ne "$want" ]; then
    verdict=FAIL; why="exit $rc, want $want"
  elif ! grep -Eq -- "$words" "$dir/out"; then
    verdict=FAIL; why="no match for /$words/"
  fi
  {
    echo "$verdict $name (exit $rc, ${ms} ms) $why"
    if [ "$verdict" = FAIL ]; then sed 's/^/    | /' "$dir/out" | tail -n 15; fi
  } > "$w/res/$n"
}

n=0
while IFS= read -r line; do
  [[ -z "${line// }" || "$line" =~ ^[[:space:]]*# ]] && continue
  n=$((n + 1))
  grep -Eq -- "$only" <<< "${line%% @@*}" || continue
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  run_case "$n" "$line" < /dev/null &
done < "$cases_file"
wait

passed=0 failed=0
for f in $(ls "$w/res" | sort -n); do
  cat "$w/res/$f"
  if head -n1 "$w/res/$f" | grep -q '^ok'; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed (of $n cases in $cases_file)"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
