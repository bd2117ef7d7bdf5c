#!/usr/bin/python3
"""Logistic regression on Criteo TSV (the baseline docs/data.md's Criteo recipe
is compared with): one hashed weight per (column, category) for C1..C26, one
per (column, value) for I1..I13 read as categories, and log1p of I1..I13
standardized, trained with Adagrad on minibatches with an optional L2 penalty
(--l2, applied to the weights a minibatch touches); prints the held-out AUC and
log loss. No feature crosses. Deterministic (file order, no shuffling). An
empty integer field is its own category (so the model sees missing values).
Several --lr / --l2 / --epochs values run every combination (its own best
regularisation, chosen on the held-out file like the model it is compared
with). Not part of the tests.

  scripts/criteo_lr_baseline.py --train train.tsv --eval eval.tsv [--epochs 2]
  scripts/criteo_lr_baseline.py --train train.tsv --eval eval.tsv --lr 0.05 0.1 0.2 --l2 0 1e-4 --epochs 1 2 3
"""
import argparse
import zlib

import numpy as np

BUCKETS = 1 << 22


def read(path):
    labels, dense, keys = [], [], []
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            labels.append(float(fields[0]))
            ints = [int(x) if x else None for x in fields[1:14]]
            dense.append([np.log1p(max(x, 0)) if x is not None else 0.0 for x in ints])
            row = [zlib.crc32(b"I%d:%s" % (k, fields[1 + k].encode())) % BUCKETS for k in range(13)]
            row += [zlib.crc32(b"C%d:%s" % (c, x.encode())) % BUCKETS
                    for c, x in enumerate(fields[14:40])]
            keys.append(row)
    return np.array(labels), np.array(dense), np.array(keys, dtype=np.int64)


def auc(labels, scores):
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels.sum()
    return (ranks[labels == 1].sum() - pos * (pos + 1) / 2) / (pos * (len(labels) - pos))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", required=True)
    p.add_argument("--eval", required=True)
    p.add_argument("--epochs", type=int, nargs="+", default=[2])
    p.add_argument("--lr", type=float, nargs="+", default=[0.1])
    p.add_argument("--l2", type=float, nargs="+", default=[0.0])
    p.add_argument("--batch", type=int, default=256)
    a = p.parse_args()
    y, x, k = read(a.train)
    ey, ex, ek = read(a.eval)
    mean, std = x.mean(0), x.std(0) + 1e-9
    x, ex = (x - mean) / std, (ex - mean) / std
    for lr in a.lr:
        for l2 in a.l2:
            for epochs, z in train(y, x, k, ex, ek, lr, l2, max(a.epochs), a.batch):
                if epochs not in a.epochs:
                    continue
                prob = np.clip(1 / (1 + np.exp(-z)), 1e-7, 1 - 1e-7)
                loss = -np.mean(ey * np.log(prob) + (1 - ey) * np.log(1 - prob))
                print("logistic regression: eval AUC %.4f  logloss %.5f  (%d rows; lr %g l2 %g "
                      "epochs %d)" % (auc(ey, z), loss, len(ey), lr, l2, epochs), flush=True)


def train(y, x, k, ex, ek, lr, l2, epochs, batch):
    """Yields (epoch, held-out logits) after each of `epochs` passes of Adagrad."""
    w, g2 = np.zeros(BUCKETS), np.full(BUCKETS, 1e-8)
    wd, gd = np.zeros(x.shape[1] + 1), np.full(x.shape[1] + 1, 1e-8)
    for epoch in range(1, epochs + 1):
        for s in range(0, len(y), batch):
            kb, xb, yb = k[s:s + batch], x[s:s + batch], y[s:s + batch]
            z = w[kb].sum(1) + xb @ wd[:-1] + wd[-1]
            err = 1 / (1 + np.exp(-z)) - yb
            touched, where = np.unique(kb, return_inverse=True)
            gk = np.bincount(where.ravel(), weights=np.repeat(err, kb.shape[1]),
                             minlength=len(touched))
            gt = gk + l2 * w[touched]
            g2[touched] += gt ** 2
            w[touched] -= lr * gt / np.sqrt(g2[touched])
            gdb = np.append(xb.T @ err, err.sum())
            gd += gdb ** 2
            wd -= lr * gdb / np.sqrt(gd)
        yield epoch, w[ek].sum(1) + ex @ wd[:-1] + wd[-1]


if __name__ == "__main__":
    main()
