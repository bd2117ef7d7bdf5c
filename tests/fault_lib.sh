# Helpers sourced by the fault tests (tests/fault_*.sh). Needs LEMRT_BIN and
# LEMRT_SRC (set by ctest). Every job runs under `timeout`, so a hang is a
# failure, never a stuck CI.
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
# KEEP_WORK=1 keeps the work directory (logs, checkpoints) for debugging.
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
failed=0
passed=0
# Options for every mpirun: with --bind-to none and oversubscription ranks
# may outnumber cores; MPI_ERRORS_ARE_FATAL is Open MPI's default.
MPIRUN=(mpirun --oversubscribe --bind-to none)
# The issue's bound: an error stops every rank within 30 s. Instrumented
# builds run several times slower (TSan ~5-10x); LEMRT_TEST_TIME_SCALE
# (default 1) stretches the bound for them (docs/development.md, "Sanitizers").
deadline=$((30 * ${LEMRT_TEST_TIME_SCALE:-1}))

# expect_same_error NAME NP EXPECTED lemrt_train-args...: the job exits
# non-zero within $deadline s (30 s), every rank prints one identical "lemrt_train: error:"
# line and it contains EXPECTED (grep basic regex).
expect_same_error() {
  local name="$1" np="$2" want="$3"; shift 3
  local start=$SECONDS
  timeout "$deadline" "${MPIRUN[@]}" -np "$np" "$LEMRT_BIN/lemrt_train" "$@" > "$work/out" 2>&1
  check_same_error "$name" "$np" "$want" $? $((SECONDS - start))
}

# check_same_error NAME NP EXPECTED RC SECONDS: as expect_same_error, for a
# job (e.g. an MPMD one) already run under `timeout "$deadline"` with its output in
# $work/out and exit status RC.
check_same_error() {
  local name="$1" np="$2" want="$3" rc="$4" secs="$5"
  local lines distinct
  lines=$(grep -c "lemrt_train: error:" "$work/out")
  distinct=$(grep "lemrt_train: error:" "$work/out" | sort -u | wc -l)
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$lines" -ne "$np" ] || [ "$distinct" -ne 1 ] \
     || ! grep "lemrt_train: error:" "$work/out" | grep -q -- "$want"; then
    echo "FAIL $name: rc=$rc after ${secs}s, $lines error lines ($distinct distinct), want '$want'"
    tail -n 30 "$work/out"
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
    echo "ok   $name (${secs}s): $(grep -m1 'lemrt_train: error:' "$work/out")"
  fi
}

# finish: prints the tally and exits with the result.
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}
