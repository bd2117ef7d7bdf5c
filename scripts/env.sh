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
