#!/usr/bin/env python3
"""Turns a lemrt_train metrics CSV (--metrics_csv) and run summary JSON
(--summary_json) into PNG plots:

  loss_auc.png        training loss per logged step, eval AUC / log loss
  breakdown.png       stacked per-stage ms per step over the run (the step's
                      wall time as a line: with pipelining the stages overlap,
                      so the stack can exceed it)
  partition_load.png  ids each SparseCore received per table (skew = the
                      busiest SparseCore over the mean)
  overview.png        the three above in one figure

Usage: scripts/plot_run.py --metrics out/metrics.csv --summary out/summary.json
                           --out out/plots
Needs python3-matplotlib (scripts/install_deps.sh installs it).
"""
import argparse
import csv
import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot_run.py: matplotlib is missing; run scripts/install_deps.sh "
             "(Debian package python3-matplotlib)")

STAGES = [("host_ms", "host"), ("sc_forward_ms", "SparseCore forward"),
          ("tc_ms", "TensorCore"), ("sc_backward_ms", "SparseCore backward")]


def read_metrics(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"plot_run.py: {path} has no rows (is log_every or eval_every set?)")
    return rows


def num(row, key):
    v = row.get(key, "")
    return float(v) if v != "" else None


def plot_loss(ax, rows):
    steps = [int(r["step"]) for r in rows]
    ax.plot(steps, [num(r, "loss") for r in rows], "o-", color="tab:blue", ms=3,
            label="train loss")
    ev = [(int(r["step"]), num(r, "eval_auc"), num(r, "eval_logloss"))
          for r in rows if num(r, "eval_auc") is not None]
    if ev:
        ax.plot([e[0] for e in ev], [e[2] for e in ev], "s--", color="tab:purple", ms=4,
                label="eval log loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title("loss and eval AUC")
    if ev:
        ax2 = ax.twinx()
        ax2.plot([e[0] for e in ev], [e[1] for e in ev], "^-", color="tab:green", ms=5,
                 label="eval AUC")
        ax2.set_ylabel("AUC")
        lines = ax.get_legend_handles_labels()
        lines2 = ax2.get_legend_handles_labels()
        ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="best")
    else:
        ax.legend(fontsize=7)


def plot_breakdown(ax, rows):
    steps = [int(r["step"]) for r in rows]
    bottom = [0.0] * len(rows)
    width = max(1.0, 0.8 * min([b - a for a, b in zip(steps, steps[1:])] or [1]))
    for key, label in STAGES:
        v = [num(r, key) or 0.0 for r in rows]
        ax.bar(steps, v, width, bottom=bottom, label=label)
        bottom = [b + x for b, x in zip(bottom, v)]
    ax.plot(steps, [num(r, "step_ms") for r in rows], "k.-", label="step (wall)")
    ax.plot(steps, [num(r, "exchange_ms") for r in rows], "r:", label="exchange (in SC)")
    ax.set_xlabel("step")
    ax.set_ylabel("ms per step (rank 0)")
    ax.set_title("step-time breakdown")
    ax.legend(fontsize=7)


def plot_partitions(ax, summary):
    tables = summary.get("tables", [])
    if not tables:
        ax.text(0.5, 0.5, "no per-table counters in the summary", ha="center")
        return
    n = max(len(t.get("partition_ids", [])) for t in tables)
    width = 0.8 / len(tables)
    for i, t in enumerate(tables):
        ids = t.get("partition_ids", [])
        mean = sum(ids) / len(ids) if ids else 0
        load = [x / mean if mean else 0 for x in ids]
        ax.bar([k + i * width for k in range(len(ids))], load, width,
               label=f"{t['name']} (skew {t.get('partition_skew', 0):.2f})")
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xlabel("SparseCore (global index)")
    ax.set_ylabel("ids received / mean")
    ax.set_title("partition load per table")
    if n <= 32:
        ax.set_xticks([k + 0.4 - width / 2 for k in range(n)], [str(k) for k in range(n)],
                      fontsize=6)
    ax.legend(fontsize=7)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--metrics", required=True, help="CSV from --metrics_csv")
    p.add_argument("--summary", required=True, help="JSON from --summary_json")
    p.add_argument("--out", required=True, help="directory for the PNGs")
    p.add_argument("--dpi", type=int, default=80)
    a = p.parse_args()
    for flag, path in (("--metrics", a.metrics), ("--summary", a.summary)):
        if not os.path.isfile(path):
            p.error(f"{flag} '{path}' is not a readable file")
    if a.dpi < 1:
        p.error(f"--dpi must be a positive integer, got {a.dpi}")
    rows = read_metrics(a.metrics)
    try:
        with open(a.summary) as f:
            summary = json.load(f)
    except ValueError as e:
        p.error(f"--summary '{a.summary}' is not JSON ({e})")
    os.makedirs(a.out, exist_ok=True)
    for name, fn in [("loss_auc", lambda ax: plot_loss(ax, rows)),
                     ("breakdown", lambda ax: plot_breakdown(ax, rows)),
                     ("partition_load", lambda ax: plot_partitions(ax, summary))]:
        fig, ax = plt.subplots(figsize=(6, 4))
        fn(ax)
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, name + ".png"), dpi=a.dpi)
        plt.close(fig)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    plot_loss(axes[0], rows)
    plot_breakdown(axes[1], rows)
    plot_partitions(axes[2], summary)
    fig.suptitle(f"lemrt: {summary.get('world_size')} chips x "
                 f"{summary.get('sparse_cores_per_chip')} SparseCores, batch "
                 f"{summary.get('global_batch')}, {summary.get('steps')} steps, "
                 f"{summary.get('samples_per_sec', 0):.0f} samples/s", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "overview.png"), dpi=a.dpi)
    plt.close(fig)
    print(f"plot_run.py: wrote loss_auc.png, breakdown.png, partition_load.png, "
          f"overview.png to {a.out}")


if __name__ == "__main__":
    main()
