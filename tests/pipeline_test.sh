#!/usr/bin/env bash
# Pipelining semantics through mpirun (1 and 2 ranks):
#  - the threaded pipeline equals, bit for bit, the same schedule run on one
#    thread (the sequential reference that applies each step's embedding
#    update after the next step's lookup, i.e. with the documented delay);
#  - pipelined runs are deterministic (same checksum twice);
#  - staleness is real: pipelined != unpipelined;
#  - warm-up: pipeline_warmup_steps >= steps equals the unpipelined run, and a
#    partial warm-up equals its one-thread reference;
#  - the summary's `pipelining` names the schedule, not the overlap: true on
#    one thread (threads.sparsecore_executor_thread false, overlap.fraction
#    0 without host workers) as on the executor thread, false unpipelined.
# Needs LEMRT_BIN and LEMRT_SRC (set by ctest).
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
failed=0

checksum() {  # checksum NP OVERRIDE
  timeout 300 mpirun --oversubscribe --bind-to none -np "$1" "$LEMRT_BIN/lemrt_train" \
    --config="$config" --override="training { steps: 30 } $2" \
    --summary_json="$work/s.json" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
  python3 -c "import json,sys; j=json.load(open('$work/s.json')); print(j['model_checksum'], j['pipelining'])"
}
expect() {  # expect NAME same|different A B
  if { [ "$2" = same ] && [ "$3" = "$4" ]; } || { [ "$2" = different ] && [ "$3" != "$4" ]; }; then
    echo "ok   $1 ($3 / $4)"
  else
    echo "FAIL $1: expected $2, got '$3' vs '$4'"; failed=$((failed + 1))
  fi
}

# The executor thread is set explicitly: left unset, lemrt_train runs the
# pipelined schedule without it where a rank owns fewer than 2 cores (2 ranks
# on a 2-core machine), and this test would compare the reference with itself.
on='disable_full_embedding_pipelining: false'
piped_cfg="sparse_core { $on pipeline_without_threads: false }"
off='sparse_core { disable_full_embedding_pipelining: true }'
ref="sparse_core { $on pipeline_without_threads: true }"
for np in 1 2; do
  piped=$(checksum $np "$piped_cfg")
  expect "np$np threaded pipeline == one-thread delayed reference" same \
    "$piped" "$(checksum $np "$ref")"
  expect "np$np pipelined run is deterministic" same "$piped" "$(checksum $np "$piped_cfg")"
  unpiped=$(checksum $np "$off")
  expect "np$np pipelined differs from unpipelined" different "${piped% *}" "${unpiped% *}"
  expect "np$np warm-up covering every step == unpipelined" same "${unpiped% *}" \
    "$(checksum $np "sparse_core { $on pipeline_warmup_steps: 30 pipeline_without_threads: false }" | cut -d' ' -f1)"
  expect "np$np partial warm-up == its one-thread reference" same \
    "$(checksum $np "sparse_core { $on pipeline_warmup_steps: 10 pipeline_without_threads: false }")" \
    "$(checksum $np "sparse_core { $on pipeline_warmup_steps: 10 pipeline_without_threads: true }")"
done
# Left unset, the executor thread follows the cores (on 2 ranks of a 2-core
# machine each owns one: no thread); either way the model is the threaded one.
for np in 1 2; do
  expect "np$np default threads == threaded pipeline" same \
    "$(checksum $np "sparse_core { $on }")" "$(checksum $np "$piped_cfg")"
done
# Evaluation drains the pipeline; eval in the middle still matches the reference.
expect "np2 with mid-run evals == reference" same \
  "$(checksum 2 "training { eval_every: 10 } $piped_cfg")" \
  "$(checksum 2 "training { eval_every: 10 } $ref")"
# The summary: `pipelining` is the schedule (the model); whether the stages
# overlapped is the executor thread and overlap.fraction.
fields() {  # fields NP OVERRIDE: the summary's pipelining, executor thread, overlap
  checksum "$1" "$2" > /dev/null
  python3 -c "import json; j=json.load(open('$work/s.json')); t=j['threads']
print(j['pipelining'], t['sparsecore_executor_thread'], 'overlap', 'none' if j['overlap']['fraction'] < 0.01 else 'some')"
}
expect "np2 pipelined on one thread: pipelining, no executor thread, no overlap" same \
  "True False overlap none" \
  "$(fields 2 "sparse_core { $on pipeline_without_threads: true maximum_parallel_iterations: 0 }")"
expect "np2 pipelined on the executor thread: pipelining, executor thread" same "True True" \
  "$(fields 2 "$piped_cfg" | cut -d' ' -f1-2)"
expect "np2 unpipelined: no pipelining, no executor thread" same "False False" \
  "$(fields 2 "$off" | cut -d' ' -f1-2)"
[ "$failed" -eq 0 ] && echo "16 passed, 0 failed" || { echo "$failed failed"; exit 1; }
