#!/usr/bin/env python3
"""Measures the model-quality levers (docs/training.md) on synthetic data with
feature crosses: trains every variant below for several seeds with lemrt_train
and prints the held-out AUC and log loss (mean and spread over the seeds) as
a Markdown table, with the teacher's own AUC and log loss as the ceiling,
then every run's AUC seed by seed (the variants of one seed see the same data
and teacher, so they compare paired).

Usage: scripts/levers_study.py [--bin build/bin] [--seeds 1,2,3]
         [--config examples/configs/levers_synthetic.pbtxt] [--out out/levers]
         [--ranks 1] [--only "NAME;NAME"] [--override 'TEXT']
Each run's summary JSON and log stay in --out; a rerun reuses the summaries it
finds there (delete them to measure again).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, interaction, table optimizer, extra text merged into the config).
ADAGRAD = "adagrad { initial_accumulator: 0.01 }"
ROWWISE = "rowwise_adagrad { }"
L2 = "weight_decay: 1e-5"
SCHEDULE = ("training { learning_rate_schedule { warmup_steps: 100 decay: POLYNOMIAL "
            "power: 2 end_factor: 0.1 } }")
# Dropout 0.1 after every hidden ReLU of both MLPs (merged into model { }).
DROPOUT = "bottom_mlp_dropout: 0.1 top_mlp_dropout: 0.1"
DCN = "dcn_v2 { num_layers: 3 low_rank: 32 }"
VARIANTS = [
    ("dot, Adagrad", "dot { }", ADAGRAD, ""),
    ("dot, row-wise Adagrad", "dot { }", ROWWISE, ""),
    ("dot, row-wise, L2, schedule", "dot { }", f"{ROWWISE} {L2}", SCHEDULE),
    ("concat, row-wise Adagrad", "concat { }", ROWWISE, ""),
    ("dcn_v2, Adagrad", "dcn_v2 { num_layers: 3 low_rank: 32 }", ADAGRAD, ""),
    ("dcn_v2, row-wise Adagrad", "dcn_v2 { num_layers: 3 low_rank: 32 }", ROWWISE, ""),
    ("dcn_v2, row-wise, L2", "dcn_v2 { num_layers: 3 low_rank: 32 }", f"{ROWWISE} {L2}", ""),
    ("dcn_v2, row-wise, schedule", "dcn_v2 { num_layers: 3 low_rank: 32 }", ROWWISE, SCHEDULE),
    ("dcn_v2, row-wise, L2, schedule", "dcn_v2 { num_layers: 3 low_rank: 32 }",
     f"{ROWWISE} {L2}", SCHEDULE),
    ("dcn_v2, row-wise, dropout 0.1", f"{DCN} {DROPOUT}", ROWWISE, ""),
    ("dcn_v2, row-wise, L2, schedule, dropout 0.1", f"{DCN} {DROPOUT}", f"{ROWWISE} {L2}",
     SCHEDULE),
]


def slug(name):
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


def table_names(config_path):
    names = []
    for line in open(config_path):
        line = line.strip()
        if line.startswith("tables {") and 'name: "' in line:
            names.append(line.split('name: "')[1].split('"')[0])
    return names


def evaluated(path):
    """The summary at `path`; exits with a sentence when its eval has no AUC
    (absent: a run stopped by a signal, or an eval set of one class or no rows)."""
    s = json.load(open(path))
    if "auc" not in s["eval"]:
        why = (f"the run was stopped by {s['stopped']['signal']}" if "stopped" in s
               else "its eval set has one class or no rows")
        sys.exit(f"{path}: no eval AUC ({why}); delete it to run it again")
    return s


def run(args, name, interaction, optimizer, extra, seed):
    out = os.path.join(args.out, f"{slug(name)}_seed{seed}.json")
    if os.path.exists(out):
        return evaluated(out)
    # Every table's optimizer is replaced through sparse-free text: the
    # config's tables carry no optimizer, so the study sets one per table
    # by appending nothing but the optimizer override below.
    override = (f"model {{ {interaction} }} training {{ seed: {seed} }} {extra} "
                f"{args.override}")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(args.ranks),
           os.path.join(args.bin, "lemrt_train"), f"--config={args.config_for(optimizer)}",
           f"--override={override}", f"--summary_json={out}"]
    log = open(os.path.join(args.out, f"{slug(name)}_seed{seed}.log"), "w")
    print(f"  {name}, seed {seed} ...", file=sys.stderr, flush=True)
    if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
        sys.exit(f"lemrt_train failed for {name} seed {seed}; see {log.name}")
    return evaluated(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--config", default=os.path.join(ROOT, "examples", "configs",
                                                    "levers_synthetic.pbtxt"))
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--out", default=os.path.join(ROOT, "out", "levers"))
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--only", default="", help="variant names separated by semicolons")
    p.add_argument("--override", default="", help="text merged into every run's config")
    args = p.parse_args()
    if not os.path.isfile(args.config):
        p.error(f"--config '{args.config}' is not a readable file")
    if not os.access(os.path.join(args.bin, "lemrt_train"), os.X_OK):
        p.error(f"no {args.bin}/lemrt_train (build first or pass --bin)")
    if args.ranks < 1:
        p.error(f"--ranks must be a positive integer, got {args.ranks}")
    if not all(x.strip().isdigit() for x in args.seeds.split(",")):
        p.error(f"--seeds must be integers separated by commas, got '{args.seeds}'")
    os.makedirs(args.out, exist_ok=True)
    base = open(args.config).read()

    def config_for(optimizer):
        # The study's config with every table's optimizer set to `optimizer`.
        path = os.path.join(args.out, f"config_{slug(optimizer)}.pbtxt")
        text = base.replace("optimizer { adagrad { } }", f"optimizer {{ {optimizer} }}")
        with open(path, "w") as f:
            f.write(text)
        return path

    args.config_for = config_for
    seeds = [int(s) for s in args.seeds.split(",")]
    only = set(filter(None, (n.strip() for n in args.only.split(";"))))
    rows = []
    teacher = {}
    for name, interaction, optimizer, extra in VARIANTS:
        if only and name not in only:
            continue
        results = [run(args, name, interaction, optimizer, extra, s) for s in seeds]
        for s, r in zip(seeds, results):
            teacher[s] = (r["eval"]["teacher_auc"], r["eval"].get("teacher_logloss"))
        rows.append((name, [r["eval"]["auc"] for r in results],
                     [r["eval"]["logloss"] for r in results]))

    def cell(values):
        if len(values) == 1:
            return f"{values[0]:.4f}"
        return f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}"

    t_auc = [teacher[s][0] for s in seeds]
    t_ll = [teacher[s][1] for s in seeds if teacher[s][1] is not None]
    dot = next((r for r in rows if r[0] == "dot, Adagrad"), None)
    print(f"| model ({len(seeds)} seeds: {args.seeds}) | eval AUC | eval log loss | "
          "share of dot's AUC gap closed |")
    print("|---|---|---|---|")
    print(f"| teacher (ceiling) | {cell(t_auc)} | {cell(t_ll) if t_ll else 'n/a'} | 100% |")
    for name, auc, ll in rows:
        closed = ""
        if dot is not None:
            gap = statistics.mean(t_auc) - statistics.mean(dot[1])
            closed = f"{100 * (statistics.mean(auc) - statistics.mean(dot[1])) / gap:.0f}%"
        print(f"| {name} | {cell(auc)} | {cell(ll)} | {closed} |")
    # The same runs seed by seed: every variant of a seed sees the same data
    # and teacher, so differences within a column are paired.
    print()
    print("| eval AUC per seed | " + " | ".join(f"seed {s}" for s in seeds) + " |")
    print("|---|" + "---|" * len(seeds))
    print("| teacher (ceiling) | " + " | ".join(f"{a:.4f}" for a in t_auc) + " |")
    for name, auc, _ in rows:
        print(f"| {name} | " + " | ".join(f"{a:.4f}" for a in auc) + " |")


if __name__ == "__main__":
    main()
