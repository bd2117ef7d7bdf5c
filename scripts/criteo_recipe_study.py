#!/usr/bin/python3
"""The Criteo recipe against logistic regression (docs/training.md "Criteo
recipe"): per data seed, writes Criteo-like data (scripts/gen_criteo_tsv.py
--criteo_like), holds out its last --eval_lines lines, counts vocabularies and
dense statistics with lemrt_vocab, trains each variant of
examples/configs/criteo_recipe.pbtxt with lemrt_train, trains the logistic
regression baseline (scripts/criteo_lr_baseline.py, every --lr_grid x --l2_grid
x epochs 1-6 combination, the best held-out AUC kept) on the same split, and
prints held-out AUC and log loss per seed as a Markdown table.

Usage: scripts/criteo_recipe_study.py [--bin build/bin] [--seeds 1,2,3]
         [--out out/criteo_recipe] [--lines 120000] [--eval_lines 20000]
         [--values 20000] [--only "NAME;NAME"] [--prepare_only]
--prepare_only writes each seed's data, vocabularies and dense statistics
(--out/seedN/: train.tsv, eval.tsv, vocab/), prints those directories and
trains nothing (scripts/bf16_quality.sh DATA=criteo_like trains on them).
A rerun reuses the data, vocabularies, summaries and baseline logs it finds
in --out (delete them to measure again).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "examples/configs/criteo_recipe.pbtxt")
# The 13 integer columns also fed as categories, through vocabularies: (text
# merged at the top, lines added to data.schema).
INTS = (" ".join(['sparse_core { max_ids_per_chip_per_sample: 39 }'] + [
    'tables { name: "i%d" dim: 16 optimizer { adagrad { initial_accumulator: 0.01 } } } '
    'features { name: "i%d" table: "i%d" }' % (i, i, i) for i in range(1, 14)]),
        " ".join('sparse { feature: "i%d" key: "I%d" mapping: VOCABULARY vocabulary_file: '
                 '"vocab/i%d.txt" }' % (i, i, i) for i in range(1, 14)))
# (name, (text merged into the config, lines added to data.schema after the
# statistics[, fields added to training])); None: the plain preset, no
# statistics).
VARIANTS = [
    ("recipe (dot)", ("", "")),
    ("recipe, 2 epochs", ("", "", "epochs: 2")),
    ("recipe, DCN-v2 (2 layers, rank 32)", ("model { dcn_v2 { num_layers: 2 low_rank: 32 } }", "")),
    ("recipe + integers as categories", INTS),
    ("plain preset (hashed, log1p), same optimizers", None),
]


def run(cmd, log, cwd):
    with open(log, "w") as f:
        if subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd) != 0:
            sys.exit("FAILED (see %s): %s" % (log, " ".join(cmd)))


def mpirun(a, tool, args, log, cwd):
    run(["mpirun", "--bind-to", "none", "-np", "1", os.path.join(a.bin, tool)] + args, log, cwd)


def prepare(a, seed, d):
    os.makedirs(d, exist_ok=True)
    if not os.path.exists(os.path.join(d, "eval.tsv")):
        run([sys.executable, os.path.join(ROOT, "scripts/gen_criteo_tsv.py"), "--lines",
             str(a.lines), "--values", str(a.values), "--seed", str(seed), "--criteo_like",
             "--out", "all.tsv"], os.path.join(d, "gen.log"), d)
        lines = open(os.path.join(d, "all.tsv")).readlines()
        split = len(lines) - a.eval_lines
        open(os.path.join(d, "train.tsv"), "w").writelines(lines[:split])
        open(os.path.join(d, "eval.tsv"), "w").writelines(lines[split:])
    if not os.path.exists(os.path.join(d, "vocab/dense_stats.pbtxt")):
        dense = " ".join('dense { name: "I%d" missing_indicator: true }' % i for i in range(1, 14))
        mpirun(a, "lemrt_vocab", ["--config=" + CONFIG, "--out_dir=vocab",
                                  "--min_frequency=%d" % a.min_frequency,
                                  "--override=data { schema { %s %s } } %s" % (dense, INTS[1], INTS[0])],
               os.path.join(d, "vocab.log"), d)
    return " ".join(l.strip() for l in open(os.path.join(d, "vocab/dense_stats.pbtxt"))
                    if l.startswith("dense"))


def plain_preset_config(d):
    """The recipe's config without vocabularies or integer features: 26 hashed tables."""
    out = []
    text = re.sub(r"\n  schema \{.*?\n  \}", "", open(CONFIG).read(), flags=re.S)
    for line in text.splitlines(True):
        if line.startswith("tables {"):
            line = line.replace("dim: 16", "vocab_size: %d dim: 16" % 20000)
        out.append(line)
    path = os.path.join(d, "plain_preset.pbtxt")
    open(path, "w").writelines(out)
    return path


def train(a, seed, d, name, extra, stats):
    slug = "".join(c if c.isalnum() else "_" for c in name)
    summary = os.path.join(d, slug + ".json")
    if not os.path.exists(summary):
        config = CONFIG if extra is not None else plain_preset_config(d)
        top, lines, training = (tuple(extra) + ("",))[:3] if extra is not None else ("", "", "")
        schema = "data { schema { %s %s } }" % (stats, lines) if extra is not None else ""
        override = "%s training { seed: %d %s } %s" % (schema, seed, training, top)
        mpirun(a, "lemrt_train", ["--config=" + config, "--override=" + override,
                                  "--summary_json=" + summary], os.path.join(d, slug + ".log"), d)
    s = json.load(open(summary))
    if "auc" not in s["eval"]:  # absent: a stopped run, or a one-class / empty eval set
        why = (f"the run was stopped by {s['stopped']['signal']}" if "stopped" in s
               else "its eval set has one class or no rows")
        sys.exit(f"{summary}: no eval AUC ({why}); delete it to run it again")
    return s["eval"]["auc"], s["eval"]["logloss"]


def baseline(a, d):
    log = os.path.join(d, "lr.log")
    if not os.path.exists(log):
        run([sys.executable, os.path.join(ROOT, "scripts/criteo_lr_baseline.py"), "--train",
             "train.tsv", "--eval", "eval.tsv", "--epochs", "1", "2", "3", "4", "5", "6",
             "--lr"] +
            a.lr_grid.split(",") + ["--l2"] + a.l2_grid.split(","), log, d)
    rows = re.findall(r"AUC ([\d.]+)\s+logloss ([\d.]+).*?\((.*)\)", open(log).read())
    best = max(rows, key=lambda r: float(r[0]))
    return float(best[0]), float(best[1]), best[2].split("; ", 1)[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build/bin"))
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--out", default="out/criteo_recipe")
    p.add_argument("--lines", type=int, default=120000)
    p.add_argument("--eval_lines", type=int, default=20000)
    p.add_argument("--values", type=int, default=20000)
    p.add_argument("--min_frequency", type=int, default=2)
    p.add_argument("--lr_grid", default="0.02,0.05")
    p.add_argument("--l2_grid", default="0,0.3")
    p.add_argument("--only", default="", help="variant names, ';'-separated")
    p.add_argument("--prepare_only", action="store_true",
                   help="write the data and vocabularies of each seed, print their directories")
    a = p.parse_args()
    a.bin = os.path.abspath(a.bin)
    if a.prepare_only:
        for seed in [int(s) for s in a.seeds.split(",")]:
            d = os.path.abspath(os.path.join(a.out, "seed%d" % seed))
            prepare(a, seed, d)
            print(d, flush=True)
        return
    variants = [v for v in VARIANTS if not a.only or v[0] in a.only.split(";")]
    results = {}
    for seed in [int(s) for s in a.seeds.split(",")]:
        d = os.path.abspath(os.path.join(a.out, "seed%d" % seed))
        stats = prepare(a, seed, d)
        for name, extra in variants:
            results.setdefault(name, []).append(train(a, seed, d, name, extra, stats))
        auc, loss, setting = baseline(a, d)
        results.setdefault("logistic regression (best of grid)", []).append((auc, loss))
        print("seed %d: logistic regression best at %s" % (seed, setting), flush=True)
    print("\n| model | held-out AUC per seed | mean AUC | log loss per seed | mean log loss |\n"
          "|---|---|---|---|---|")
    for name, rs in results.items():
        print("| %s | %s | %.4f | %s | %.5f |" % (
            name, " / ".join("%.4f" % r[0] for r in rs), statistics.mean(r[0] for r in rs),
            " / ".join("%.4f" % r[1] for r in rs), statistics.mean(r[1] for r in rs)))


if __name__ == "__main__":
    main()
