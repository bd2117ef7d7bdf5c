#!/usr/bin/python3
"""Writes a synthetic Criteo-format TSV (label, 13 integers, 26 hex categories
per line) with a planted teacher, so lemrt and scripts/torch_dlrm.py train on
the very same file. Deterministic in --seed.

Default (the data of the speed comparisons, unchanged): column c draws value v
in [0, V) from a Zipf-like law (v = floor(V^u) - 1 with u uniform, V =
--values) mixed with a uniform tail; integers are Poisson counts, never
missing; the label is Bernoulli(sigmoid(teacher)) where the teacher is a sum of
one weight per (column, value) plus a linear term in log1p of two integers --
exactly a logistic model over the columns.

--criteo_like turns on the four options below, which make the data look like
Criteo's in the respects a logistic model cannot capture (each also on its own):
  --cardinalities  column c has min(V, Kaggle's count of distinct C(c+1)
                   values) values (C9 has 3, C20 4, C17 10, ...), so some
                   columns are small and their pairs recur;
  --heavy_tail     integers are rounded log-normal counts (a few huge values,
                   many 0s and 1s) instead of Poisson ones;
  --missing        each integer column is empty at Kaggle's rate for that
                   column (I1 45%, I12 77%, I2 0%, ...), and an empty field
                   moves the teacher's logit by a per-column amount;
  --interactions   the teacher adds, per pair of columns in PAIRS, the dot
                   product of 4-d latent vectors of the two values (a
                   factorization-machine term), and per (integer, column) in
                   DENSE_CROSS, the standardized log1p count times a
                   per-value slope.
The options draw from a second random stream, so the default output stays
byte for byte what it was. Each term's scale is fixed below.

  scripts/gen_criteo_tsv.py --lines 204800 --out /tmp/criteo_synth.tsv
  scripts/gen_criteo_tsv.py --lines 120000 --values 20000 --criteo_like --out criteo_like.tsv
"""
import argparse

import numpy as np

# Distinct values per categorical column in Criteo's Kaggle train.txt.
KAGGLE_CARDINALITIES = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683,
                        8351593, 3194, 27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15,
                        286181, 105, 142572]
# Fraction of empty fields per integer column I1..I13 in Kaggle's train.txt (rounded).
KAGGLE_MISSING = [0.454, 0.0, 0.215, 0.217, 0.026, 0.223, 0.043, 0.0005, 0.043, 0.454, 0.043,
                  0.765, 0.217]
# Categorical column pairs with a latent interaction (0-based columns): small
# with small, small with large, large with large.
PAIRS = [(8, 19), (5, 13), (16, 21), (22, 24), (5, 1), (13, 0), (19, 4), (0, 1)]
# (integer column, categorical column) pairs with a per-value slope.
DENSE_CROSS = [(1, 5), (4, 13), (6, 16)]
LATENT = 4
PAIR_SCALE = 0.6
DENSE_CROSS_SCALE = 0.5
MISSING_SHIFT = 0.4


def hashed_uniform(values, salt):
    """A deterministic uniform in [0, 1) per (value, salt), without a table."""
    h = (values.astype(np.int64) * 2654435761 + salt * 40503 + 12345) % 1000003
    h = (h * 48271 + salt) % 2147483647
    return (h % 1000003) / 1000003.0


def cardinalities(a):
    if a.cardinalities:
        return np.minimum(np.array(KAGGLE_CARDINALITIES), a.values)
    return np.full(26, a.values)


def draw_categories(rng, n, a):
    card = cardinalities(a).astype(np.float64)
    u = rng.random((n, 26))
    zipf = np.floor(np.power(card, u)).astype(np.int64) - 1
    uniform = rng.integers(0, a.values, size=(n, 26))
    if a.cardinalities:
        uniform = uniform % card.astype(np.int64)
    return np.where(rng.random((n, 26)) < 0.7, zipf, uniform)


def latent(cats, column, d):
    return (hashed_uniform(cats[:, column], 1000 + 97 * column + d) - 0.5) * np.sqrt(12.0)


def interaction_logit(cats, z):
    out = np.zeros(cats.shape[0])
    for a, b in PAIRS:
        dot = sum(latent(cats, a, d) * latent(cats, b, d) for d in range(LATENT))
        out += PAIR_SCALE * dot / np.sqrt(LATENT)
    for j, c in DENSE_CROSS:
        slope = (hashed_uniform(cats[:, c], 5000 + 31 * c + j) - 0.5) * np.sqrt(12.0)
        out += DENSE_CROSS_SCALE * z[:, j] * slope
    return out


def main():
    paragraphs = __doc__.split("\n\n")
    p = argparse.ArgumentParser(description=paragraphs[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(paragraphs[1:]))
    p.add_argument("--lines", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--values", type=int, default=200000,
                   help="distinct category values per column (the cap with --cardinalities)")
    p.add_argument("--criteo_like", action="store_true",
                   help="all four options below")
    for flag in ("cardinalities", "heavy_tail", "missing", "interactions"):
        p.add_argument("--" + flag, action="store_true")
    a = p.parse_args()
    if a.criteo_like:
        a.cardinalities = a.heavy_tail = a.missing = a.interactions = True
    rng = np.random.default_rng(a.seed)
    extra = np.random.default_rng([a.seed, 1])
    n = a.lines
    cats = draw_categories(rng, n, a)
    # Per-(column, value) teacher weights from a hash, without a table.
    h = (cats * 2654435761 + np.arange(26) * 40503) % 1000003
    w = (h / 1000003.0 - 0.5) * 1.2
    ints = rng.poisson(lam=np.linspace(0.5, 20.0, 13), size=(n, 13))
    if a.heavy_tail:
        mu = np.linspace(-0.5, 3.0, 13)
        ints = np.floor(np.exp(extra.normal(mu, 1.5, size=(n, 13)))).astype(np.int64)
    dense = np.log1p(ints)
    missing = np.zeros((n, 13), dtype=bool)
    if a.missing:
        missing = extra.random((n, 13)) < np.array(KAGGLE_MISSING)
    z = (dense - dense.mean(0)) / (dense.std(0) + 1e-9)
    z[missing] = 0.0
    present = np.where(missing, 0.0, dense)
    logit = w.sum(axis=1) + 0.4 * (present[:, 0] - present[:, 5]) - 0.3
    if a.missing:
        shift = MISSING_SHIFT * np.where(np.arange(13) % 2 == 0, -1.0, 1.0)
        logit += (missing * shift).sum(axis=1)
    if a.interactions:
        logit += interaction_logit(cats, z)
    labels = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    with open(a.out, "w") as f:
        for i in range(n):
            fields = ["" if missing[i, j] else str(ints[i, j]) for j in range(13)]
            f.write("%d\t%s\t%s\n" % (labels[i], "\t".join(fields),
                                      "\t".join("%x" % v for v in cats[i])))


if __name__ == "__main__":
    main()
