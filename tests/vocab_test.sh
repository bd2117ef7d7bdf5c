#!/usr/bin/env bash
# lemrt_vocab (docs/data.md "Vocabularies"): on 1 and 3 ranks it writes the
# same vocabularies, equal to a plain count of the training TSV (min
# frequency, most frequent first, ties by value); a run that maps the
# features through them, its tables sized from them (vocab_size unset),
# reports the OOV rate the plain count predicts. The dense recipe
# (docs/data.md "Dense inputs"): the dense statistics it writes equal a plain
# computation (STANDARDIZE of log1p values and of clipped ones, MIN_MAX) at 1
# and 3 ranks, and training on those lines draws no scale warning. Needs LEMRT_BIN, LEMRT_SRC.
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$LEMRT_SRC/examples/configs/multihot_tfrecord.pbtxt"
python3 "$LEMRT_SRC/scripts/gen_multihot_data.py" --out "$work" --train_rows 900 --eval_rows 100 \
  --seed 11 > /dev/null
text="data { text { train_path: \"$work/train.tsv\" eval_path: \"$work/eval.tsv\" header: true } }"
mpi() { timeout 300 mpirun --oversubscribe --bind-to none "$@"; }
# The dense recipe (docs/data.md "Dense inputs"): the config's dense lines as
# a user writes them; lemrt_vocab fills in their statistics.
grep -v '^ *dense {' "$config" > "$work/nodense.pbtxt"
dense_in='data { schema { dense { name: "price" transform: LOG1P }
  dense { name: "age" normalize: MIN_MAX } dense { name: "hour" clip_max: 20 missing_indicator: true } } }'
for np in 1 3; do
  mpi -np $np "$LEMRT_BIN/lemrt_vocab" --config="$work/nodense.pbtxt" --override="$text $dense_in" \
    --features=user,category,tags --min_frequency=3 --out_dir="$work/v$np" > "$work/v$np.log" 2>&1 \
    || { cat "$work/v$np.log"; echo "FAILED: lemrt_vocab -np $np"; exit 1; }
done
cat "$work/v3.log"
# Map user, category and tags through them; their tables sized from them.
{ grep -v '^tables { name: "\(users\|categories\|tags\)"' "$work/nodense.pbtxt" | grep -v 'feature: "\(user\|category\|tags\)"'
  echo 'tables { name: "users" dim: 16 optimizer { adagrad {} } }'
  echo 'tables { name: "categories" dim: 16 optimizer { adagrad {} } }'
  echo 'tables { name: "tags" dim: 16 optimizer { adagrad {} } }'
} > "$work/vocab.pbtxt"
schema="data { schema {
  $(grep '^dense' "$work/v3/dense_stats.pbtxt")
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
import glob, math, re
def stats_lines(path):
    out = {}
    for line in open(path):
        if line.startswith("dense {"):
            name = re.search(r'name: "(\w+)"', line).group(1)
            out[name] = {k: float(v) for k, v in re.findall(r'(mean|stddev|minimum|maximum|clip_max): ([-\d.e+]+)', line)}
            out[name]["line"] = line
    return out
s1, s3 = stats_lines(f"{w}/v1/dense_stats.pbtxt"), stats_lines(f"{w}/v3/dense_stats.pbtxt")
def plain(values):
    m = sum(values) / len(values)
    return m, math.sqrt(sum((x - m) ** 2 for x in values) / len(values))
price = [math.log1p(max(float(r[col["price"]]), 0)) for r in rows]
age = [float(r[col["age"]]) for r in rows]
hour = [min(float(r[col["hour"]]), 20) for r in rows]
close = lambda a, b: abs(a - b) <= 1e-6 * max(1, abs(b))
for name, values in (("price", price), ("hour", hour)):
    m, sd = plain(values)
    got = s3[name]
    check(close(got["mean"], m) and close(got["stddev"], sd) and "STANDARDIZE" in got["line"],
          f"{name}: STANDARDIZE mean {got['mean']} stddev {got['stddev']} = plain {m:.9g} {sd:.9g}")
check(s3["age"]["minimum"] == min(age) and s3["age"]["maximum"] == max(age) and "MIN_MAX" in s3["age"]["line"],
      f"age: MIN_MAX {s3['age']['minimum']}..{s3['age']['maximum']} = plain {min(age)}..{max(age)}")
check("missing_indicator: true" in s3["hour"]["line"] and s3["hour"]["clip_max"] == 20,
      "hour keeps its clip and missing indicator")
check(all(close(s1[n][k], s3[n][k]) for n in s3 for k in s3[n] if k != "line"),
      "dense statistics: 1 and 3 ranks agree")
log = open(f"{w}/train.log").read()
check("far above unit scale" not in log, "normalized inputs: no scale warning at start")
check(json.load(open(f"{w}/s.json"))["train"]["samples"] > 0, "trained on the normalized inputs")
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
