# Sourced by the opt-in peer installers (install_torchrec.sh,
# install_jax_sc.sh): the arguments they share and the virtual environment
# they install into. The installer sets NAME (for messages), VENV and PY
# ($VENV/bin/python) and defines usage, installed (exit 0 when $PY has the
# pinned packages) and describe (one line: what is pinned).

# Handles the arguments (--help; --python prints $PY if installed, else exits
# 1) and exits 0 printing $PY when the pinned packages are there already;
# otherwise returns with Debian's python and an environment at $VENV to
# install into.
peer_venv_start() {
  case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --python) installed && { echo "$PY"; exit 0; }; exit 1 ;;
    "") ;;
    *) echo "$NAME: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  if installed; then
    peer_venv_done
    exit 0
  fi
  # Debian's python with its venv module (not a pyenv or other interpreter).
  "$(dirname "${BASH_SOURCE[0]}")/install_deps.sh" python3 python3-venv
  mkdir -p "$(dirname "$VENV")"
  [ -x "$PY" ] || /usr/bin/python3 -m venv "$VENV"
}

# Prints what is installed where, then $PY (the line compare scripts read).
peer_venv_done() {
  echo "$NAME: $(describe) in $VENV"
  echo "$PY"
}
