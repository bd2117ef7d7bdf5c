#!/usr/bin/env bash
# Config errors through mpirun: every rank prints the same sentence and the job
# exits non-zero, quickly (no hang); the example errors of
# docs/configuration.md are, word for word, what lemrt_train prints. Needs
# LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
failed=0
passed=0

expect_error() {  # expect_error NAME NP EXPECTED_SUBSTRING lemrt_train-args...
  local name="$1" np="$2" want="$3"; shift 3
  timeout 60 mpirun --oversubscribe --bind-to none -np "$np" "$LEMRT_BIN/lemrt_train" "$@" \
    > "$work/out" 2>&1
  local rc=$?
  local lines distinct
  lines=$(grep -c "lemrt_train: error:" "$work/out")
  distinct=$(grep "lemrt_train: error:" "$work/out" | sort -u | wc -l)
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$lines" -ne "$np" ] || [ "$distinct" -ne 1 ] \
     || ! grep -q -- "$want" "$work/out"; then
    echo "FAIL $name: rc=$rc, $lines error lines ($distinct distinct), want '$want'"
    cat "$work/out"
    failed=$((failed + 1))
  else
    echo "ok   $name: $(grep -m1 'lemrt_train: error:' "$work/out")"
    passed=$((passed + 1))
  fi
}

# doc_example TEXT: the example error of docs/configuration.md holding TEXT is
# a whole line that the last case printed after "lemrt_train: error: ".
doc_example() {
  local line
  line=$(grep -m1 -F -- "$1" "$LEMRT_SRC/docs/configuration.md")
  if [ -n "$line" ] && grep -q -x -F -- "lemrt_train: error: $line" "$work/out"; then
    echo "ok   docs/configuration.md example: $line"
    passed=$((passed + 1))
  else
    echo "FAIL docs/configuration.md example '${line:-(none holds '$1')}' is not what lemrt_train printed:"
    grep -m1 "lemrt_train: error:" "$work/out"
    failed=$((failed + 1))
  fi
}

expect_error num_chips 3 "num_chips: is 4 but the MPI world size is 3" \
  --config="$config" --override='topology { num_chips: 4 }'
doc_example "topology.num_chips: is 4 but the MPI world size is 3"
# The documented semantic error names where the field was set (file:line:column):
# the example config with global_batch 1000, on 4 chips of 4 SparseCores.
sed 's/^  global_batch: 1536$/  global_batch: 1000/' "$LEMRT_SRC/examples/configs/dlrm_synthetic.pbtxt" \
  > "$work/model.pbtxt"
cd "$work"
expect_error batch_file_line 4 "^lemrt_train: error: model.pbtxt:[0-9]*:[0-9]*: training.global_batch: 1000 is not divisible" \
  --config=model.pbtxt
cd - > /dev/null
doc_example "training.global_batch: 1000 is not divisible"
expect_error batch_divisible 2 "global_batch: 100 is not divisible by the total number of SparseCores 8" \
  --config="$config" --override='training { global_batch: 100 }'
expect_error unknown_table 2 "unknown table 'zzz'" \
  --config="$config" --override='features { name: "x" table: "zzz" }'
expect_error dim 2 "must be > 0, got -3" \
  --config="$config" --override='tables { name: "d" vocab_size: 10 dim: -3 combiner: SUM }'
expect_error syntax 2 "--override:1:" --config="$config" --override='training { steps: x }'
expect_error missing_file 2 "cannot read config file '/nonexistent.pbtxt'" --config=/nonexistent.pbtxt
expect_error checkpoint_every 1 "--checkpoint_every must be >= 0 steps, got -3" \
  --config="$config" --checkpoint_every=-3
# A field a flag set is named by the flag as given.
expect_error checkpoint_every_without_dir 2 "^lemrt_train: error: --checkpoint_every=5: checkpoint.every_steps" \
  --config="$config" --checkpoint_every=5
doc_example "checkpoint.every_steps: is set but checkpoint.dir is not"
printf 'tables { name: "a" vocab_size: 10\n  dim: 4 combiner: SUMM }\n' > "$work/bad.pbtxt"
expect_error bad_enum 2 "bad.pbtxt:2:" --config="$work/bad.pbtxt"
expect_error missing_criteo 2 "No such file\|cannot open\|not found\|NotFound\|/nonexistent/train.tsv" \
  --config="$config" --override='data { criteo { train_path: "/nonexistent/train.tsv" } }'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
