# Sourced by the scripts: Open MPI settings for running as root (CI does) and
# with more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
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
