#!/usr/bin/python3
"""Writes a synthetic Criteo-format TSV (label, 13 integers, 26 hex categories
per line) with a planted teacher, so lemrt and scripts/torch_dlrm.py train on
the very same file. Deterministic in --seed.

Categories: column c draws value v in [0, 2^24) from a Zipf-like law
(v = floor(V^u) - 1 with u uniform, V = --values) mixed with a uniform tail.
Integers: Poisson counts. Label ~ Bernoulli(sigmoid(teacher)), where the
teacher is a sum of per-(column, value) weights plus a dense term.

  scripts/gen_criteo_tsv.py --lines 204800 --out /tmp/criteo_synth.tsv
"""
import argparse

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--values", type=int, default=200000,
                   help="distinct category values per column")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    n = a.lines
    u = rng.random((n, 26))
    zipf = np.floor(np.power(float(a.values), u)).astype(np.int64) - 1
    uniform = rng.integers(0, a.values, size=(n, 26))
    cats = np.where(rng.random((n, 26)) < 0.7, zipf, uniform)
    # Per-(column, value) teacher weights from a hash, without a table.
    h = (cats * 2654435761 + np.arange(26) * 40503) % 1000003
    w = (h / 1000003.0 - 0.5) * 1.2
    ints = rng.poisson(lam=np.linspace(0.5, 20.0, 13), size=(n, 13))
    dense = np.log1p(ints)
    logit = w.sum(axis=1) + 0.4 * (dense[:, 0] - dense[:, 5]) - 0.3
    labels = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    with open(a.out, "w") as f:
        for i in range(n):
            f.write("%d\t%s\t%s\n" % (labels[i], "\t".join(map(str, ints[i])),
                                      "\t".join("%x" % v for v in cats[i])))


if __name__ == "__main__":
    main()
