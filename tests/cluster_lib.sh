# Helpers sourced by the emulated-cluster tests (tests/cluster_*_test.sh):
# an emulated cluster of its own per test (scripts/cluster_emulator.sh, prefix
# unique to the test's pid, so tests may run in parallel), removed on exit
# whatever happens; jobs started through scripts/lemrt_run inside host 0.
# Needs LEMRT_BIN and LEMRT_SRC. A machine where the emulator cannot run
# (not root, namespaces not allowed, no mpirun) skips the test with one line
# (exit 77, ctest's SKIP_RETURN_CODE).
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
emu="$LEMRT_SRC/scripts/cluster_emulator.sh"
launcher="$LEMRT_SRC/scripts/lemrt_run"
config="$LEMRT_SRC/tests/testdata/small_dlrm.pbtxt"
prefix="lc$$"
h0="$prefix-h0" h1="$prefix-h1"
failed=0
passed=0
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
pass() { passed=$((passed + 1)); echo "ok   $*"; }
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$@"; }

command -v mpirun >/dev/null || { echo "SKIP: no mpirun on PATH"; exit 77; }
why="$("$emu" check 2>&1)" || { echo "SKIP: ${why#cluster_emulator: }"; exit 77; }

# Clusters of earlier tests that were killed before their exit trap ran (a
# ctest timeout): their prefix is lc<pid of the test>, and that pid is gone.
for stale in $(ip netns list | awk '{print $1}' | sed -n 's/^lc\([0-9]*\)-sw$/\1/p'); do
  kill -0 "$stale" 2>/dev/null || "$emu" --prefix="lc$stale" down
done

work="$(mktemp -d)"
# KEEP_WORK=1 keeps the work directory (logs, checkpoints) for debugging.
trap '"$emu" --prefix="$prefix" down; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT

# cluster_up N [up args]: a fresh emulated cluster of N hosts (2 slots each).
cluster_up() {
  "$emu" --prefix="$prefix" up "$@" 2>&1 | sed 's/^/  /'
  state="${LEMRT_CLUSTER_STATE:-/run/lemrt-cluster}/$prefix"
  [ -s "$state/hostfile" ] || { echo "FAIL: the emulated cluster did not come up"; exit 1; }
}

# on HOST COMMAND...: runs COMMAND in an emulated host.
on() { local h="$1"; shift; "$emu" --prefix="$prefix" exec "$h" "$@"; }

# cluster_run [lemrt_run options] -- PROGRAM ARGS: lemrt_run inside host 0
# with the emulator's rsh agent; between hosts TCP on the bridge only, within
# a host shared memory (vader), as on a cluster. Under `timeout 120`
# (run_timeout=S changes it), SIGKILL 15 s later (the launcher, given
# SIGTERM, waits for the ranks to stop), so a hang fails the test; the exit
# trap's `down` then ends what is left in the hosts.
run_timeout=120
cluster_run() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  timeout -k 15 "$run_timeout" "$emu" --prefix="$prefix" exec "$h0" "$launcher" --hostfile "$state/hostfile" --network "$(cat "$state/subnet")" "${opts[@]}" \
    --mpirun-args --mca plm_rsh_agent "$state/rsh" --mca btl tcp,vader,self -- "$@"
}

# job_processes: the processes left in the emulated hosts ("" when none).
job_processes() {
  local h
  for h in $(ip netns list | awk '{print $1}' | grep "^$prefix-h"); do
    ip netns pids "$h" | xargs -r ps -o pid=,comm= -p | sed "s/^/$h: /"
  done
}

# host_link_bytes HOST: bytes the host's switch port carried both ways.
host_link_bytes() {
  ip -n "$prefix-sw" -s -j link show "h${1##*-h}" | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["stats64"]
print(s["rx"]["bytes"] + s["tx"]["bytes"])'
}

# finish: prints the tally and exits with the result.
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}
