#!/usr/bin/env bash
# The opt-in TorchRec comparison's scripts without TorchRec (CI never installs
# it): compare_torch.sh and install_torchrec.sh parse, torchrec_dlrm.py
# compiles, install_torchrec.sh's arguments, and its --python check (what
# compare_torch.sh runs to find TorchRec) against stand-in environments: none,
# wrong versions, the pinned versions. Installs nothing.
set -euo pipefail
: "${LEMRT_SRC:?}"
cd "$LEMRT_SRC"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash -n scripts/compare_torch.sh || fail "compare_torch.sh does not parse"
bash -n scripts/install_torchrec.sh || fail "install_torchrec.sh does not parse"
python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])" \
  scripts/torchrec_dlrm.py || fail "torchrec_dlrm.py does not compile"

out="$(scripts/install_torchrec.sh --help)" || fail "--help exited $?"
grep -q -- "--python" <<<"$out" || fail "--help does not describe --python: $out"
rc=0; out="$(scripts/install_torchrec.sh --bogus 2>&1)" || rc=$?
[ "$rc" = 2 ] || fail "--bogus exited $rc, expected 2"
grep -q "unknown argument '--bogus'" <<<"$out" || fail "--bogus said: $out"

# --python: exit 1 and print nothing unless the environment's python imports
# torch, fbgemm_gpu and torchrec at the pinned versions with FBGEMM's CPU
# operator; create nothing.
expect_python() {  # expect_python RC VENV
  local rc=0 out
  out="$(TORCHREC_VENV="$2" scripts/install_torchrec.sh --python)" || rc=$?
  [ "$rc" = "$1" ] || fail "--python with $2 exited $rc, expected $1 (printed '$out')"
  if [ "$1" = 0 ]; then
    [ "$out" = "$2/bin/python" ] || fail "--python printed '$out', expected $2/bin/python"
  else
    [ -z "$out" ] || fail "--python printed '$out' for an unusable $2"
  fi
}
expect_python 1 "$tmp/none"
[ ! -e "$tmp/none" ] || fail "--python created $tmp/none"

# A stand-in environment: python3 with stub torch, fbgemm_gpu and torchrec.
pins() { sed -n "s/^$1=//p" scripts/install_torchrec.sh; }
fake_env() {  # fake_env DIR TORCH FBGEMM TORCHREC
  mkdir -p "$1/bin" "$1/stubs/torch"
  printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "$1/stubs" > "$1/bin/python"
  chmod +x "$1/bin/python"
  cat > "$1/stubs/torch/__init__.py" <<PY
import types
__version__ = "$2+cpu"
ops = types.SimpleNamespace(fbgemm=types.SimpleNamespace(
    split_embedding_codegen_lookup_sgd_function_cpu=object()))
PY
  echo "__version__ = '$3'" > "$1/stubs/fbgemm_gpu.py"
  echo "__version__ = '$4'" > "$1/stubs/torchrec.py"
}
torch_v="$(pins TORCH_VERSION)"; fbgemm_v="$(pins FBGEMM_VERSION)"; rec_v="$(pins TORCHREC_VERSION)"
[ -n "$torch_v" ] && [ -n "$fbgemm_v" ] && [ -n "$rec_v" ] || fail "no pinned versions found"
fake_env "$tmp/pinned" "$torch_v" "$fbgemm_v" "$rec_v"
expect_python 0 "$tmp/pinned"
fake_env "$tmp/old_fbgemm" "$torch_v" 0.8.0 "$rec_v"
expect_python 1 "$tmp/old_fbgemm"
fake_env "$tmp/no_op" "$torch_v" "$fbgemm_v" "$rec_v"
sed -i 's/split_embedding_codegen_lookup_sgd_function_cpu/other/' "$tmp/no_op/stubs/torch/__init__.py"
expect_python 1 "$tmp/no_op"
echo "PASS: TorchRec comparison scripts (parse, arguments, --python on 4 environments)"
