#!/usr/bin/env bash
# The opt-in comparison with the public SparseCore library's preprocessing
# without the library (CI never installs it): compare_preprocess.sh and
# install_jax_sc.sh parse, install_jax_sc.sh's arguments and its --python
# check on a missing environment; bench_preprocess --write_workload writes
# the benchmark's batch in its documented layout, the same bytes twice, and
# refuses a bad sample count; jax_sc_preprocess.py reads that file back and
# computes its per-partition id limits as a plain loop does. Installs nothing.
set -euo pipefail
: "${LEMRT_SRC:?}" "${LEMRT_BIN:?}"
cd "$LEMRT_SRC"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash -n scripts/compare_preprocess.sh || fail "compare_preprocess.sh does not parse"
bash -n scripts/install_jax_sc.sh || fail "install_jax_sc.sh does not parse"
rc=0; out="$(scripts/install_jax_sc.sh --bogus 2>&1)" || rc=$?
[ "$rc" = 2 ] || fail "install_jax_sc.sh --bogus exited $rc, expected 2"
grep -q "unknown argument '--bogus'" <<<"$out" || fail "--bogus said: $out"
rc=0; out="$(JAX_SC_VENV="$tmp/none" scripts/install_jax_sc.sh --python)" || rc=$?
[ "$rc" = 1 ] && [ -z "$out" ] || fail "--python on a missing environment: rc $rc, printed '$out'"
[ ! -e "$tmp/none" ] || fail "--python created $tmp/none"

bench="$LEMRT_BIN/bench_preprocess"
"$bench" --write_workload="$tmp/a.bin" --samples_per_sc=8 || fail "--write_workload exited $?"
"$bench" --write_workload="$tmp/b.bin" --samples_per_sc=8
cmp -s "$tmp/a.bin" "$tmp/b.bin" || fail "two writes of the workload differ"
rc=0; out="$("$bench" --write_workload="$tmp/c.bin" --samples_per_sc=0 2>&1)" || rc=$?
[ "$rc" = 2 ] && grep -q "samples_per_sc" <<<"$out" || fail "--samples_per_sc=0: rc $rc, said '$out'"
rc=0; out="$("$bench" --write_workload="$tmp/no/dir.bin" 2>&1)" || rc=$?
[ "$rc" = 1 ] && grep -q "cannot write the workload" <<<"$out" || fail "unwritable path: rc $rc, said '$out'"

# The layout, read with the standard library alone, against the reader the
# peer script uses (Debian's python3 has numpy).
/usr/bin/python3 - "$tmp/a.bin" <<'PY' || fail "the workload file or its reader is wrong"
import collections, struct, sys
sys.path.insert(0, "scripts")
import jax_sc_preprocess as peer
data = open(sys.argv[1], "rb").read()
words = struct.unpack(f"<{len(data) // 8}q", data)
features, samples, local_sc, total_sc, vocab = words[:5]
assert (features, samples, local_sc, total_sc, vocab) == (20, 32, 4, 512, 10**8), words[:5]
pos, plain = 5, []
for f in range(features):
    offsets = words[pos:pos + samples + 1]
    pos += samples + 1
    assert offsets[0] == 0 and all(a <= b for a, b in zip(offsets, offsets[1:])), f
    ids = words[pos:pos + offsets[-1]]
    pos += offsets[-1]
    assert all(0 <= i < vocab for i in ids), f
    plain.append((offsets, ids))
assert pos == len(words), (pos, len(words))
got = peer.read_workload(sys.argv[1])
assert got[:5] == (features, samples, local_sc, total_sc, vocab), got[:5]
for (offsets, ids), (o, i) in zip(plain, got[5]):
    assert list(o) == list(offsets) and list(i) == list(ids)
    count = collections.Counter()
    for row in range(samples):
        for k in range(offsets[row], offsets[row + 1]):
            count[(row // (samples // local_sc), ids[k] % total_sc)] += 1
    assert peer.max_partition_ids(o, i, samples, local_sc, total_sc) == max(count.values())
print(f"workload: {sum(o[-1] for o, _ in plain)} ids in {features} features")
PY
echo "PASS: preprocessing comparison scripts (parse, arguments, workload file and its reader)"
