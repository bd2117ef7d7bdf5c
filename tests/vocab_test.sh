#!/usr/bin/env bash
# lemrt_vocab (docs/data.md "Vocabularies"): on 1 and 3 ranks it writes the
# same vocabularies, equal to a plain count of the training TSV (min
# frequency, most frequent first, ties by value); a run that maps the
# features through them, its tables sized from them (vocab_size unset),
# reports the OOV rate the plain count predicts. Needs LEMRT_BIN, LEMRT_SRC.
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/examples/configs/multihot_tfrecord.pbtxt"
python3 "$LEMRT_SRC/scripts/gen_multihot_data.py" --out "$work" --train_rows 900 --eval_rows 100 \
  --seed 11 > /dev/null
text="data { text { train_path: \"$work/train.tsv\" eval_path: \"$work/eval.tsv\" header: true } }"
mpi() { timeout 300 mpirun --oversubscribe --bind-to none "$@"; }
for np in 1 3; do
  mpi -np $np "$LEMRT_BIN/lemrt_vocab" --config="$config" --override="$text" \
    --features=user,category,tags --min_frequency=3 --out_dir="$work/v$np" > "$work/v$np.log" 2>&1 \
    || { cat "$work/v$np.log"; echo "FAILED: lemrt_vocab -np $np"; exit 1; }
done
cat "$work/v3.log"
# Map user, category and tags through them; their tables sized from them.
{ grep -v '^tables { name: "\(users\|categories\|tags\)"' "$config" | grep -v 'feature: "\(user\|category\|tags\)"'
  echo 'tables { name: "users" dim: 16 optimizer { adagrad {} } }'
  echo 'tables { name: "categories" dim: 16 optimizer { adagrad {} } }'
  echo 'tables { name: "tags" dim: 16 optimizer { adagrad {} } }'
} > "$work/vocab.pbtxt"
schema="data { schema {
  sparse { feature: \"user\" key: \"user_id\" type: INT64 mapping: VOCABULARY vocabulary_file: \"$work/v3/user.txt\" num_oov_buckets: 2 }
  sparse { feature: \"category\" key: \"item_category\" mapping: VOCABULARY vocabulary_file: \"$work/v3/category.txt\" }
  sparse { feature: \"tags\" separator: \"|\" mapping: VOCABULARY vocabulary_file: \"$work/v3/tags.txt\" num_oov_buckets: 0 }
} }"
mpi -np 2 "$LEMRT_BIN/lemrt_train" --config="$work/vocab.pbtxt" \
  --override="$text $schema training { global_batch: 64 epochs: 1 log_every: 0 }" \
  --summary_json="$work/s.json" --checkpoint_dir="$work/ck" > "$work/train.log" 2>&1 \
  || { cat "$work/train.log"; echo "FAILED: lemrt_train with vocabularies"; exit 1; }

python3 - "$work" <<'PY'
import collections, json, sys
w = sys.argv[1]
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fails.append(what)
rows = [l.split("\t") for l in open(f"{w}/train.tsv").read().splitlines()]
col = {name: i for i, name in enumerate(rows[0])}
rows = rows[1:]
values = {"user": [[r[col["user_id"]]] for r in rows],
          "category": [[r[col["item_category"]]] for r in rows],
          "tags": [[t for t in r[col["tags"]].split("|") if t] for r in rows]}
summary = {f["name"]: f for f in json.load(open(f"{w}/s.json"))["data"]["features"]}
for f, lists in values.items():
    counts = collections.Counter(v for l in lists for v in l)
    kept = sorted(((c, v) for v, c in counts.items() if c >= 3), key=lambda x: (-x[0], x[1]))
    want = "".join(f"{v}\t{c}\n" for c, v in kept)
    got1, got3 = open(f"{w}/v1/{f}.txt").read(), open(f"{w}/v3/{f}.txt").read()
    check(got1 == got3 == want, f"{f}: {len(kept)} of {len(counts)} values kept, 1 and 3 ranks agree")
    total = sum(counts.values())
    oov = total - sum(c for c, _ in kept)
    check(summary[f]["values"] == total and summary[f]["oov"] == oov,
          f"{f}: summary OOV {summary[f]['oov']:.0f}/{summary[f]['values']:.0f} = plain count {oov}/{total}")
import glob, re
manifest = open(glob.glob(f"{w}/ck/step-*/manifest.pbtxt")[0]).read()
for table, vocab, oov in (("users", "user", 2), ("categories", "category", 1), ("tags", "tags", 0)):
    entries = sum(1 for _ in open(f"{w}/v3/{vocab}.txt"))
    m = re.search(r'name: "%s"\s+vocab_size: (\d+)' % table, manifest)
    check(m is not None and int(m.group(1)) == entries + oov,
          f"table {table} sized from its vocabulary: {m and m.group(1)} = {entries} + {oov} OOV")
if fails:
    print("FAILED:", len(fails)); sys.exit(1)
print("vocab: all passed")
PY
