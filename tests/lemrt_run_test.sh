#!/usr/bin/env bash
# scripts/lemrt_run, the mpirun launcher (docs/cluster.md), without emulated
# hosts: the mpirun line it builds from a hostfile, a Slurm allocation and
# its options (--dry-run), its error sentences, and a real 2-rank job on this
# machine stopped by SIGTERM to the launcher (every rank saves the same step,
# exit 143). Needs LEMRT_BIN and LEMRT_SRC.
set -uo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
run="$LEMRT_SRC/scripts/lemrt_run"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0 passed=0
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
pass() { passed=$((passed + 1)); echo "ok   $*"; }
# expect NAME WANT_RC PATTERN... -- lemrt_run args: the launcher's exit status
# and stderr (grep -E patterns, each must match; a leading ! must not); a
# launcher still running after 60 s is stopped (status 124).
expect() {
  local name="$1" want_rc="$2"; shift 2
  local pats=()
  while [ "$1" != -- ]; do pats+=("$1"); shift; done
  shift
  timeout 60 env -u SLURM_JOB_NODELIST "${ENVS[@]}" "$run" "$@" > "$work/out" 2>&1
  local rc=$? p ok=1
  [ "$rc" -eq "$want_rc" ] || ok=""
  for p in "${pats[@]}"; do
    if [[ "$p" == !* ]]; then grep -qE -- "${p#!}" "$work/out" && ok=""
    else grep -qE -- "$p" "$work/out" || ok=""; fi
  done
  if [ -n "$ok" ]; then pass "$name"; else fail "$name: rc=$rc (want $want_rc)"; cat "$work/out"; fi
}
ENVS=()
printf 'node1 slots=2  # first\n\n# comment\nnode2 slots=2\n' > "$work/hosts"

expect hostfile 0 "^lemrt_run: 4 ranks on hostfile .* \(2 ranks per host, --bind none\)" \
  "^lemrt_run: hosts: node1 node2$" \
  "mpirun -np 4 --hostfile $work/hosts --map-by ppr:2:node --bind-to none " \
  "--mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 2 --mca oob_tcp_keepalive_probes 3 " \
  "--mca orte_tmpdir_base /[^ ]*/lemrt_run\.[^ ]+ " "--mca mpi_yield_when_idle 1 " \
  "--mca btl_tcp_if_include 10.1.0.0/16 --mca oob_tcp_if_include 10.1.0.0/16 " \
  " -x PATH prog --flag 'two words'$" \
  -- --hostfile "$work/hosts" --network 10.1.0.0/16 --dry-run prog --flag "two words"
expect data_network 0 "--mca btl_tcp_if_include 10.2.0.0/16 --mca oob_tcp_if_include 10.1.0.0/16 " \
  -- --hostfile "$work/hosts" --network 10.1.0.0/16 --data-network 10.2.0.0/16 --dry-run prog
expect user_mca_wins 0 "--mca oob_tcp_keepalive_time 9 -x FOO prog$" "!oob_tcp_keepalive_time 5" \
  -- --hostfile "$work/hosts" --dry-run --mpirun-args --mca oob_tcp_keepalive_time 9 -x FOO -- prog
expect bind_cores 0 "--map-by ppr:2:node:PE=4 --bind-to core " "!mpi_yield_when_idle" \
  -- --hostfile "$work/hosts" --bind cores --cores-per-host 8 --dry-run prog
expect np_given 0 "mpirun -np 3 --hostfile .* --map-by ppr:2:node " -- --hostfile "$work/hosts" -np 3 --dry-run prog
ENVS=(SLURM_JOB_NODELIST='n[01-03,7],gpu[8-9]x,m5' SLURM_NTASKS_PER_NODE='2(x7)' SLURM_CPUS_ON_NODE=16)
expect slurm 0 "^lemrt_run: hosts: n01 n02 n03 n7 gpu8x gpu9x m5$" \
  "mpirun -np 14 --hostfile [^ ]*/hostfile --map-by ppr:2:node:PE=8 --bind-to core " \
  -- --bind cores --dry-run prog
ENVS=(LEMRT_TEST_STALL=1:2:3)
expect local_exports 0 "mpirun -np 3 .*-x LEMRT_TEST_STALL " -- -np 3 --dry-run prog
ENVS=()
expect too_many_ranks 2 "^lemrt_run: error: -np 5 is more than 2 hosts x 2 ranks per host$" \
  -- --hostfile "$work/hosts" -np 5 prog
expect unknown_option 2 "^lemrt_run: error: unknown option '--bogus' \(see --help; mpirun's own options go after --mpirun-args\)$" \
  -- --bogus prog
expect no_program 2 "^lemrt_run: error: no program to run" -- -np 2
expect unterminated_mpirun_args 2 "must end with a '--' before the program" -- --mpirun-args -x FOO prog
expect bad_keepalive 2 "--keepalive must be TIME,INTERVAL,PROBES" -- --keepalive 5,2 prog
expect missing_hostfile 2 "cannot read the hostfile '/nonexistent'" -- --hostfile /nonexistent prog
# A value-taking option last, without its value: a sentence, not a loop that
# never ends (the test's timeout catches a hang).
for opt in -np -n --hostfile --ranks-per-host --bind --cores-per-host --network --data-network \
    --keepalive --mpirun --abort-grace; do
  expect "no_value_$opt" 2 "^lemrt_run: error: the option $opt needs a value, and none follows it" \
    -- "$opt"
done
expect bad_cores_per_host 2 "^lemrt_run: error: --cores-per-host must be a positive number of cores, got 'x'$" \
  "!unbound variable" -- --cores-per-host x --dry-run prog

# The host check through a fake mpirun whose first try crashes after printing
# one host's name (as Open MPI sometimes does on hosts sharing a hostname): the
# retry's names still find the shared one; a check that never succeeds is an
# error of its own.
cat > "$work/fake_mpirun" <<FAKE
#!/usr/bin/env bash
n=\$(cat "$work/tries" 2>/dev/null || echo 0); echo \$((n + 1)) > "$work/tries"
[ "\$n" -ge "\${FAKE_FAILS:-1}" ] || { echo '[1,0]<stdout>:twin'; exit 139; }
printf '[1,0]<stdout>:twin\n[1,1]<stdout>:twin\n'
FAKE
chmod +x "$work/fake_mpirun"
expect host_check_retry 2 "call themselves 'twin'" -- --hostfile "$work/hosts" --mpirun "$work/fake_mpirun" prog
tries_seen="$(cat "$work/tries")"
[ "$tries_seen" = 2 ] && pass "host_check_retry: two tries" || fail "host_check_retry: $tries_seen tries (want 2)"
rm -f "$work/tries"; ENVS=(FAKE_FAILS=9)
expect host_check_fails 2 "the host check .* failed" "!call themselves" \
  -- --hostfile "$work/hosts" --mpirun "$work/fake_mpirun" prog
ENVS=()

# A real job: SIGTERM to the launcher stops every rank after the same step.
long='training { steps: 1000000 log_every: 10 eval_samples: 0 }'
"$run" -np 2 --mpirun-args --oversubscribe -- "$LEMRT_BIN/lemrt_train" \
  --config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt" --override="$long" \
  --checkpoint_dir="$work/ck" --summary_json="$work/s.json" > "$work/job.log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "step 20/" "$work/job.log" && break; sleep 0.1; done
kill -TERM "$job"
t0=$SECONDS
timeout 60 tail --pid="$job" -f /dev/null
wait "$job"; rc=$?
if [ "$rc" -eq 143 ] && grep -q "lemrt_train: stopped by SIGUSR1 after step [0-9]* of 1000000 (every rank finished it); checkpoint saved: $work/ck/step-" "$work/job.log" \
   && grep -q "^lemrt_run: every rank stopped after SIGTERM" "$work/job.log" \
   && [ -z "$(pgrep -f -- "--checkpoint_dir=$work/ck")" ]; then
  pass "sigterm_local: every rank stopped and saved, exit 143 $((SECONDS - t0)) s after the signal"
else
  fail "sigterm_local: rc=$rc"; grep -v "^I2\|step [0-9]*/" "$work/job.log" | tail -n 15
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
