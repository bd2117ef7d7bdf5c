#!/usr/bin/env bash
# The Criteo recipe (docs/training.md "Criteo recipe") on Criteo-like data,
# small: scripts/gen_criteo_tsv.py --criteo_like writes the same file for the
# same seed, empties each integer column at Kaggle's rate, keeps the small
# columns small and the counts heavy-tailed, and its default output is the
# old generator's; the recipe's two documented commands (lemrt_vocab with
# the missing indicators, lemrt_train with the statistics it wrote) on
# examples/configs/criteo_recipe.pbtxt beat scripts/criteo_lr_baseline.py
# (its best of lr 0.02/0.05, epochs 1-4) on the same held-out rows.
# And the bf16 study's tools on this config (scripts/bf16_quality.sh
# DATA=criteo_like): scripts/table_fields.py sets fields in every tables
# entry (one line or many; strings, comments and table_stacks untouched; a
# field already set replaced; errors named by line), its BF16 variant of the
# recipe plans 2 bytes a row element and a slot element where fp32 plans 4;
# scripts/bf16_quality_table.py's differences, references and verdicts;
# scripts/bf16_quality.sh's variants on N ranks, PERTURB, OVERRIDE, refusals.
# Needs LEMRT_BIN and LEMRT_SRC.
set -euo pipefail
: "${LEMRT_BIN:?}" "${LEMRT_SRC:?}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
py="${LEMRT_PYTHON:-/usr/bin/python3}"
gen="$LEMRT_SRC/scripts/gen_criteo_tsv.py"
"$py" "$gen" --lines 60000 --values 20000 --seed 5 --criteo_like --out "$work/all.tsv"
"$py" "$gen" --lines 2000 --values 20000 --seed 5 --criteo_like --out "$work/a.tsv"
"$py" "$gen" --lines 2000 --values 20000 --seed 5 --criteo_like --out "$work/b.tsv"
"$py" "$gen" --lines 2000 --values 500 --seed 5 --out "$work/default.tsv"
head -n 50000 "$work/all.tsv" > "$work/train.tsv"
tail -n +50001 "$work/all.tsv" > "$work/eval.tsv"

cd "$work"
mpi() { timeout 300 mpirun --oversubscribe --bind-to none "$@"; }
config="$LEMRT_SRC/examples/configs/criteo_recipe.pbtxt"
dense=$(for i in $(seq 13); do echo "dense { name: \"I$i\" missing_indicator: true }"; done)
mpi -np 1 "$LEMRT_BIN/lemrt_vocab" --config="$config" --out_dir=vocab --min_frequency=2 \
  --override="data { schema { $dense } }" > vocab.log 2>&1 \
  || { cat vocab.log; echo "FAILED: lemrt_vocab (recipe step 1)"; exit 1; }
mpi -np 1 "$LEMRT_BIN/lemrt_train" --config="$config" \
  --override="data { schema { $(grep '^dense' vocab/dense_stats.pbtxt) } }" \
  --summary_json=recipe.json > train.log 2>&1 \
  || { cat train.log; echo "FAILED: lemrt_train (recipe step 2)"; exit 1; }
"$py" "$LEMRT_SRC/scripts/criteo_lr_baseline.py" --train train.tsv --eval eval.tsv \
  --lr 0.02 0.05 --epochs 1 2 3 4 > lr.log
"$py" "$LEMRT_SRC/scripts/table_fields.py" --set 'dtype: BF16 slot_dtype: BF16' "$config" bf16.pbtxt
# The plans (stdout) apart from the logs (stderr): mpirun forwards the two
# streams as they come, so a log line could land inside a table line.
for c in "$config" bf16.pbtxt; do
  mpi -np 1 "$LEMRT_BIN/lemrt_train" --config="$c" --dry_run >> plans.txt 2>> plans.log \
    || { cat plans.txt plans.log; echo "FAILED: --dry_run of $c"; exit 1; }
done
# scripts/bf16_quality.sh itself, 4 steps of the levers config: NAME@N on N
# ranks, PERTURB's variant, OVERRIDE on every run; its refusals.
quality() {
  LEMRT_BUILD="$(dirname "$LEMRT_BIN")" CONFIG="$LEMRT_SRC/examples/configs/levers_synthetic.pbtxt" \
    STEPS=4 SEEDS=1 OUT="$work/quality" timeout 300 bash "$LEMRT_SRC/scripts/bf16_quality.sh"
}
VARIANTS="fp32 fp32@2 bf16_slots fp32_perturbed" PERTURB="training { dense_learning_rate: 0.02 }" \
  OVERRIDE="training { global_batch: 256 }" quality > quality.txt 2>&1 \
  || { cat quality.txt; echo "FAILED: scripts/bf16_quality.sh"; exit 1; }
for v in "fp32 fp32_perturbed" "bf16" "fp32 bf16@0"; do
  echo "VARIANTS=$v: $(VARIANTS="$v" quality 2>&1 && echo "exit 0")" >> refused.txt
done

"$py" - "$work" "$LEMRT_SRC" <<'PY'
import json, re, subprocess, sys
w, src = sys.argv[1], sys.argv[2]
sys.path.insert(0, f"{src}/scripts")
import gen_criteo_tsv as g
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fails.append(what)
check(open(f"{w}/a.tsv").read() == open(f"{w}/b.tsv").read(), "same seed, same file")
# The default output is the old generator's: its formulas, written out here.
import numpy as np
rng = np.random.default_rng(5)
n = 2000
u = rng.random((n, 26))
zipf = np.floor(np.power(500.0, u)).astype(np.int64) - 1
uniform = rng.integers(0, 500, size=(n, 26))
cats = np.where(rng.random((n, 26)) < 0.7, zipf, uniform)
h = (cats * 2654435761 + np.arange(26) * 40503) % 1000003
ints = rng.poisson(lam=np.linspace(0.5, 20.0, 13), size=(n, 13))
d = np.log1p(ints)
logit = ((h / 1000003.0 - 0.5) * 1.2).sum(1) + 0.4 * (d[:, 0] - d[:, 5]) - 0.3
labels = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
want = "".join("%d\t%s\t%s\n" % (labels[i], "\t".join(map(str, ints[i])),
                                 "\t".join("%x" % v for v in cats[i])) for i in range(n))
check(open(f"{w}/default.tsv").read() == want, "default options: the old generator's lines")
rows = [l.rstrip("\n").split("\t") for l in open(f"{w}/all.tsv")]
check(all(len(r) == 40 for r in rows), "40 fields per line")
empty = [sum(r[1 + j] == "" for r in rows) / len(rows) for j in range(13)]
check(all(abs(e - rate) <= 0.015 for e, rate in zip(empty, g.KAGGLE_MISSING)),
      "each integer column empty at Kaggle's rate (within 0.015): " +
      " ".join(f"I{j + 1} {e:.3f}" for j, e in enumerate(empty)))
for c in (8, 19, 16):
    distinct = len({r[14 + c] for r in rows})
    check(distinct <= g.KAGGLE_CARDINALITIES[c], f"C{c + 1}: {distinct} values, Kaggle has {g.KAGGLE_CARDINALITIES[c]}")
counts = sorted(int(r[13]) for r in rows if r[13])
check(counts[-1] > 100 * counts[len(counts) // 2], f"I13 heavy-tailed: max {counts[-1]}, median {counts[len(counts) // 2]}")
recipe = json.load(open(f"{w}/recipe.json"))["eval"]
lr = max(float(a) for a in re.findall(r"AUC ([\d.]+)", open(f"{w}/lr.log").read()))
check(recipe["auc"] > lr + 0.005,
      f"the recipe beats logistic regression on held-out AUC: {recipe['auc']:.4f} vs {lr:.4f}")

q = {v: json.load(open(f"{w}/quality/{v}_1.json")) for v in ("fp32", "fp32_np2", "bf16_slots", "fp32_perturbed")}
out = open(f"{w}/quality.txt").read()
check([q[v]["world_size"] for v in q] == [1, 2, 1, 1] and {q[v]["global_batch"] for v in q} == {256} and
      len({q[v]["model_checksum"] for v in ("fp32", "bf16_slots", "fp32_perturbed")}) == 3 and
      open(f"{w}/quality/fp32.pbtxt").read().count("dtype: FP32 slot_dtype: FP32 }") == 6 and
      open(f"{w}/quality/bf16_slots.pbtxt").read().count("dtype: BF16 slot_dtype: BF16 }") == 6 and
      "fp32@2 - fp32 AUC" in out and "fp32_perturbed - fp32 AUC" in out,
      "bf16_quality.sh: fp32@2 on 2 ranks, BF16 tables, PERTURB and OVERRIDE applied, the table:\n" + out)
refused = open(f"{w}/refused.txt").read()
check("exit 0" not in refused and "fp32_perturbed needs PERTURB" in refused and
      "VARIANTS must include fp32" in refused and "must be a positive integer" in refused,
      "bf16_quality.sh refuses a variant it cannot run:\n" + refused)
# The bf16 study's variants: every table of the recipe BF16 with BF16 slots.
plans = re.findall(r"^(c\d+) +16 +(\d+) +\d+ +(\d+) +1 +(\d+) +(\d+) ", open(f"{w}/plans.txt").read(), re.M)
elem = [(t, int(table) / (int(pad) * int(rows)), int(slot) / (int(pad) * int(rows)))
        for t, pad, rows, table, slot in plans]
check(len(elem) == 52 and [e[1:] for e in elem] == [(4.0, 4.0)] * 26 + [(2.0, 2.0)] * 26,
      "table_fields.py's BF16 recipe: 2 bytes a row element and a slot (fp32: 4), all 26 tables")
import table_fields as tf
text = """# tables { a comment } dtype: X
tables {
  name: "a}b"  # } in a comment
  dim: 8 dtype: FP32
  optimizer { adagrad { } }
}
tables: { name: 'q' dim: 4 }
sparse_core { table_stacks { tables: "a}b" tables: "q" } dtype: Y }
"""
want = """# tables { a comment } dtype: X
tables {
  name: "a}b"  # } in a comment
  dim: 8 \n  optimizer { adagrad { } }
dtype: BF16 slot_dtype: BF16 }
tables: { name: 'q' dim: 4 dtype: BF16 slot_dtype: BF16 }
sparse_core { table_stacks { tables: "a}b" tables: "q" } dtype: Y }
"""
got = tf.set_table_fields(text, tf.parse_fields("dtype: BF16 slot_dtype: BF16"))
check(got == want, "table_fields: multi-line and one-line entries set, a set field replaced, "
      "strings, comments and table_stacks kept:\n" + got)
def error_of(t, spec="dtype: BF16"):
    try:
        tf.set_table_fields(t, tf.parse_fields(spec))
    except tf.ConfigError as e:
        return (e.line, str(e))
    return None
check(error_of('a { }\ntables { name: "x" ') == (2, "1 brace(s) never closed"), "table_fields: unclosed brace")
check(error_of('tables { }\n}') == (2, "'}' closes nothing"), "table_fields: stray brace")
check(error_of('model { }') == (0, "no top-level 'tables { ... }' entry"), "table_fields: no tables")
check(error_of('tables [ { } ]')[0] == 1, "table_fields: list syntax refused")
check(error_of('tables { name: "x }\n') == (1, "unterminated string"), "table_fields: unterminated string")
check(error_of('tables { }', "dtype BF16") is not None, "table_fields: malformed --set")
# bf16_quality_table.py: each NAME@N against fp32@N, the rest against fp32.
import bf16_quality_table as bq, io, contextlib
def quality_table(auc):
    for v, pair in auc.items():
        for k, a in zip(("1", "2"), pair):
            with open(f"{w}/{v.replace('@', '_np')}_{k}.json", "w") as f:
                json.dump({"eval": {"auc": a, "logloss": 0.5}}, f)
    buf = io.StringIO()
    sys.argv = ["bf16_quality_table.py", w, " ".join(auc), "1", "2"]
    with contextlib.redirect_stdout(buf):
        bq.main()
    return buf.getvalue()
auc = {"fp32": (0.70, 0.80), "fp32@2": (0.7004, 0.8004), "bf16": (0.7005, 0.7985),
       "bf16_exchange@2": (0.7010, 0.8008)}
table = quality_table(auc)
check("| 1 | 0.7000 | 0.7004 (+0.0004) | 0.7005 (+0.0005) | 0.7010 (+0.0006) |" in table and
      ("bf16 - fp32 AUC: mean -0.00050 (standard error 0.00100), median -0.00050, sd 0.00141, "
       "min -0.00150, max +0.00050; 1 of 2 seeds within 0.001;")
      in table and "bf16_exchange@2 - fp32@2 AUC: mean +0.00050" in table and "mean within 0.001" in table and
      "fp32@2 - fp32 AUC: mean +0.00040" in table, "bf16_quality_table: references and sums:\n" + table)
table = quality_table(dict(auc, bf16=(0.6985, 0.7985)))
check("bf16 - fp32 AUC: mean -0.00150" in table and "mean NOT within 0.001" in table,
      "bf16_quality_table: a mean off by 0.0015 is NOT within 0.001")
if fails:
    print("FAILED:", len(fails)); sys.exit(1)
print("criteo_recipe: all passed")
PY
