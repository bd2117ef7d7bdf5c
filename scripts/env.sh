# Sourced by the scripts: Open MPI settings for running as root (CI does),
# with more ranks than cores, and on cores the ranks share.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Ranks that wait in MPI yield the core instead of busy-polling it: on a
# machine whose cores the ranks share (this one), a polling rank starves the
# rank it waits for (docs/performance.md, "lemrt vs the reference DLRM").
export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
LEMRT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LEMRT_JOBS="${LEMRT_JOBS:-$(nproc)}"

# lemrt_build DIR [cmake args...]: configures and builds into DIR.
lemrt_build() {
  local dir="$1"; shift
  cmake -S "$LEMRT_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  cmake --build "$dir" -j "$LEMRT_JOBS"
}

# The python3 that has Debian's matplotlib (a pyenv or venv python3 earlier
# on PATH may lack it); the plotting scripts run under it.
LEMRT_PYTHON=python3
python3 -c "import matplotlib" 2>/dev/null || LEMRT_PYTHON=/usr/bin/python3

# lemrt_unit_targets DIR: prints the build targets of DIR's `unit`-labelled
# tests, one per line (test name = target name, except X_fuzz_replay ->
# X_fuzzer; a test that runs another test's binary with other arguments, such
# as gemm_test_no_bf16, has no target of its own and is left out: its binary
# is built for the other test). DIR must be configured (Makefiles or Ninja).
lemrt_unit_targets() {
  local targets
  if [ -f "$1/build.ninja" ]; then
    targets="$(ninja -C "$1" -t targets all | sed -n 's/^\([^:/ ]*\): .*/\1/p')"
  else
    targets="$(cmake --build "$1" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')"
  fi
  (cd "$1" && ctest -L unit --show-only=json-v1) | python3 -c '
import json, sys
targets = set(sys.argv[1].split())
for t in json.load(sys.stdin)["tests"]:
    n = t["name"]
    n = n[:-len("_fuzz_replay")] + "_fuzzer" if n.endswith("_fuzz_replay") else n
    if n in targets:
        print(n)' "$targets" | sort -u
}

# lemrt_other_isa_level: the x86-64 level the sanitizer stage builds for, so
# that CI tests a second instruction set besides -march=native: x86-64-v3
# (AVX2 + FMA) on a machine with AVX-512, x86-64-v2 (SSE4.2) otherwise.
lemrt_other_isa_level() {
  if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then echo x86-64-v3; else echo x86-64-v2; fi
}

# lemrt_clang: the clang++ the ASan+UBSan / fuzz build uses (clang-14 on Debian 12).
lemrt_clang() {
  command -v clang++-14 || command -v clang++
}

# Argument checks for the scripts (a sentence and exit 2, not a shell error
# or a silently ignored setting). LEMRT_ME names the script in the sentences.
LEMRT_ME="$(basename "$0")"
# lemrt_positive_int NAME VALUE: VALUE must be an integer >= 1.
lemrt_positive_int() {
  [[ "$2" =~ ^[1-9][0-9]{0,8}$ ]] && return 0
  echo "$LEMRT_ME: $1 must be a positive integer, got '$2'" >&2; exit 2
}
# lemrt_nonneg_int NAME VALUE: VALUE must be an integer >= 0.
lemrt_nonneg_int() {
  [[ "$2" =~ ^(0|[1-9][0-9]{0,8})$ ]] && return 0
  echo "$LEMRT_ME: $1 must be a non-negative integer, got '$2'" >&2; exit 2
}
# lemrt_file NAME PATH: PATH must be a readable regular file.
lemrt_file() {
  [[ -f "$2" && -r "$2" ]] && return 0
  echo "$LEMRT_ME: $1 '$2' is not a readable file" >&2; exit 2
}
# lemrt_no_args "$@": for the scripts set by environment variables only:
# --help / -h prints the header comment; any other argument is refused (it
# was ignored, so `--steps=10` ran the default steps).
lemrt_no_args() {
  [[ $# -eq 0 ]] && return 0
  if [[ "$1" == -h || "$1" == --help ]]; then
    awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 0
  fi
  echo "$LEMRT_ME: takes no arguments, got '$1'; its settings are environment variables (see $LEMRT_ME --help)" >&2
  exit 2
}

# lemrt_fg CMD [ARGS...]: runs CMD (a program, not a shell function) in a
# process group of its own and waits for it; returns its status. SIGINT,
# SIGTERM or SIGHUP to the script ends CMD's whole process group (SIGTERM,
# then SIGKILL after LEMRT_FG_GRACE seconds, default 15: mpirun forwards
# SIGTERM to its ranks) and then the script, with 128 + the signal's number.
# Without it a signalled script died and left its mpirun and ranks running.
LEMRT_FG_PID=""
exec {LEMRT_STDERR}>&2  # the script's stderr, also where lemrt_fg's output is redirected
lemrt_fg_stop() {
  local sig="$1" i
  trap '' INT TERM HUP
  if [[ -n "$LEMRT_FG_PID" ]]; then
    echo "$LEMRT_ME: SIG$sig: stopping $LEMRT_FG_CMD (pid $LEMRT_FG_PID)" >&"$LEMRT_STDERR"
    kill -TERM -- "-$LEMRT_FG_PID" 2>/dev/null
    for ((i = 0; i < ${LEMRT_FG_GRACE:-15} * 10; i++)); do
      kill -0 -- "-$LEMRT_FG_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$LEMRT_FG_PID" 2>/dev/null || true
    wait "$LEMRT_FG_PID" 2>/dev/null || true
  fi
  exit $((128 + $(kill -l "$sig")))
}
lemrt_fg() {
  local rc=0
  trap 'lemrt_fg_stop INT' INT
  trap 'lemrt_fg_stop TERM' TERM
  trap 'lemrt_fg_stop HUP' HUP
  LEMRT_FG_CMD="$(basename "$1")"
  setsid "$@" &
  LEMRT_FG_PID=$!
  wait "$LEMRT_FG_PID" || rc=$?
  LEMRT_FG_PID=""
  return "$rc"
}
