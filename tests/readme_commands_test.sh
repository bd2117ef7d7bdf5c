#!/usr/bin/env bash
# The README's commands work: every code block after a `<!-- readme-test ... -->`
# line is run. A `sh` block's commands run as written (build/bin and examples/
# resolve to this build and the source tree) with a short training override
# appended to each lemrt_train line; a `protobuf` block is a config, trained on
# 1 rank for a few steps. Checks each command succeeds and prints what the
# README says the first run prints.
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p build out
ln -s "$LEMRT_BIN" build/bin
ln -s "$LEMRT_SRC/examples" examples

# Few steps, an eval of one global batch: the commands' own settings stay.
short='training { steps: 3 eval_every: 0 eval_samples: 1536 log_every: 1 }'

# Extracts the marked blocks: block_N.sh (one command per line, continuations
# joined, the short override merged into lemrt_train's) and block_N.pbtxt.
python3 - "$LEMRT_SRC/README.md" "$short" <<'EOF'
import re, shlex, sys
readme, short = sys.argv[1], sys.argv[2]
lines = open(readme).read().split("\n")
n, i = 0, 0
while i < len(lines):
    if not lines[i].startswith("<!-- readme-test"):
        i += 1
        continue
    fence = lines[i + 1]
    m = re.match(r"```(\w+)", fence)
    if not m:
        sys.exit(f"README.md:{i + 2}: a readme-test marker must be followed by a ```sh or ```protobuf block")
    lang, body, j = m.group(1), [], i + 2
    while not lines[j].startswith("```"):
        body.append(lines[j])
        j += 1
    n += 1
    if lang == "protobuf":
        open(f"block_{n}.pbtxt", "w").write("\n".join(body) + "\n")
    elif lang == "sh":
        cmds, cur = [], ""
        for line in body:
            line = re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else ""
            cur += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
            if not line.endswith("\\"):
                if cur.strip():
                    cmds.append(cur.strip())
                cur = ""
        out = []
        for c in cmds:
            if "lemrt_train" in c and "--dry_run" not in c:
                words = shlex.split(c)
                o = [k for k, w in enumerate(words) if w.startswith("--override=")]
                if o:
                    words[o[0]] += " " + short
                else:
                    words.append("--override=" + short)
                c = shlex.join(words)
            out.append(c)
        open(f"block_{n}.sh", "w").write("\n".join(out) + "\n")
    else:
        sys.exit(f"README.md:{i + 2}: readme-test block of unknown kind '{lang}'")
    i = j + 1
if n < 2:
    sys.exit(f"README.md has {n} readme-test blocks; expected the commands and the minimal config")
EOF

checked=0
for b in block_*.sh; do
  while IFS= read -r cmd; do
    echo "+ $cmd"
    if ! bash -c "$cmd" </dev/null >cmd.log 2>&1; then
      cat cmd.log
      echo "FAIL: README command failed: $cmd"
      exit 1
    fi
    # What the README's "first run" section says a training run prints.
    if [[ "$cmd" == *lemrt_train* && "$cmd" != *--dry_run* ]]; then
      for want in "lemrt run summary" "model checksum" "step-time breakdown" "memory plan (per chip)"; do
        grep -q "$want" cmd.log || { cat cmd.log; echo "FAIL: '$want' not printed by: $cmd"; exit 1; }
      done
    fi
    if [[ "$cmd" == *--dry_run* ]]; then
      grep -q "The plan fits." cmd.log || { cat cmd.log; echo "FAIL: the dry run did not fit"; exit 1; }
    fi
    checked=$((checked + 1))
  done <"$b"
done
[ -s out/summary.json ] || { echo "FAIL: the README's run wrote no out/summary.json"; exit 1; }

for cfg in block_*.pbtxt; do
  echo "+ minimal config $cfg"
  if ! mpirun -np 1 --bind-to none "$LEMRT_BIN/lemrt_train" --config="$cfg" \
       --override="$short" </dev/null >cmd.log 2>&1; then
    cat cmd.log
    echo "FAIL: the README's minimal config does not train"
    exit 1
  fi
  grep -q "model checksum" cmd.log || { cat cmd.log; echo "FAIL: no summary from the minimal config"; exit 1; }
  checked=$((checked + 1))
done
echo "PASS: $checked README commands and configs"
