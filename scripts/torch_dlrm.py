#!/usr/bin/python3
"""A plain PyTorch DLRM, the reference scripts/compare_torch.sh measures lemrt
against. Same model, data and update as lemrt's Criteo config:

  26 tables x --vocab rows, dim 16, nn.EmbeddingBag(mode="sum") (one id per
  feature per sample), bottom MLP 13-512-256-64-16 (ReLU after every layer),
  dot interaction of the 27 vectors (z0 plus the 351 pairs i > j), top MLP
  367-512-256-1 (ReLU but after the last), BCE-with-logits, mean over the
  global batch, plain SGD (lr 0.1) on every parameter.
  Init: tables uniform(-0.05, 0.05) (lemrt's default initializer), weights
  Xavier-uniform, biases 0 (lemrt's DlrmDense), from --seed.
  Data: the Criteo TSV lemrt reads (scripts/gen_criteo_tsv.py), parsed the
  same way: dense = log(1 + max(x, 0)), row of category value v in table t =
  Mix64(v ^ Mix64(t + 1)) % vocab, and with --ranks W rank r reads lemrt's
  shard: the r-th contiguous slice (batch / W lines) of each global batch of
  consecutive lines (docs/data.md "Epochs and sharding").

With --ranks 2 the ranks are processes joined by torch.distributed (gloo):
dense gradients are all-reduced, embedding rows (sparse gradients) are
all-gathered and applied on every replica.

Prints "samples/s N" (steps after --warmup, slowest rank) and writes the loss
of every step (global mean) to --loss_csv as "step,loss".
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix64(x):
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def load_shard(path, rank, world, local_batch, steps, vocab):
    """Rank's rows of the first `steps` global batches, in step order, parsed
    like lemrt: batch s is lines [s G, (s + 1) G) (G = world x local_batch),
    and rank r's share its r-th contiguous slice of local_batch lines."""
    g = world * local_batch
    lines = []
    with open(path, "rb") as f:
        for line in f:
            lines.append(line.rstrip(b"\n"))
            if len(lines) == g * steps:
                break
    if len(lines) < g * steps:
        raise SystemExit(f"{path}: {len(lines)} lines, needs {g * steps}")
    rows = [lines[s * g + rank * local_batch + i].split(b"\t")
            for s in range(steps) for i in range(local_batch)]
    labels = np.array([float(r[0]) for r in rows], dtype=np.float32)
    ints = np.array([[int(v) if v else 0 for v in r[1:14]] for r in rows], dtype=np.float64)
    dense = np.log1p(np.maximum(ints, 0)).astype(np.float32)
    cats = np.array([[int(v, 16) for v in r[14:40]] for r in rows], dtype=np.uint64)
    ids = np.empty(cats.shape, dtype=np.int64)
    for t in range(26):
        ids[:, t] = (mix64(cats[:, t] ^ mix64(np.uint64(t + 1))) % np.uint64(vocab)).astype(np.int64)
    return torch.from_numpy(labels), torch.from_numpy(dense), torch.from_numpy(ids)


class Dlrm(nn.Module):
    def __init__(self, vocab, dim=16, tables=26):
        super().__init__()
        self.emb = nn.ModuleList(
            [nn.EmbeddingBag(vocab, dim, mode="sum", sparse=True) for _ in range(tables)])
        for e in self.emb:
            nn.init.uniform_(e.weight, -0.05, 0.05)

        def mlp(widths, relu_last):
            layers = []
            for i in range(len(widths) - 1):
                lin = nn.Linear(widths[i], widths[i + 1])
                nn.init.xavier_uniform_(lin.weight)
                nn.init.zeros_(lin.bias)
                layers.append(lin)
                if i + 2 < len(widths) or relu_last:
                    layers.append(nn.ReLU())
            return nn.Sequential(*layers)

        f1 = tables + 1
        self.bottom = mlp([13, 512, 256, 64, dim], True)
        self.top = mlp([dim + f1 * (f1 - 1) // 2, 512, 256, 1], False)
        li, lj = torch.tril_indices(f1, f1, offset=-1)
        self.register_buffer("li", li)
        self.register_buffer("lj", lj)

    def forward(self, dense, ids):
        z0 = self.bottom(dense)
        embs = [e(ids[:, t:t + 1]) for t, e in enumerate(self.emb)]
        z = torch.stack([z0] + embs, dim=1)  # [B, 27, d]
        s = torch.bmm(z, z.transpose(1, 2))
        x = torch.cat([z0, s[:, self.li, self.lj]], dim=1)
        return self.top(x).squeeze(1)


def run(rank, a):
    world = a.ranks
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}",
                                rank=rank, world_size=world)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    lb = a.batch // world
    labels, dense, ids = load_shard(a.data, rank, world, lb, a.steps, a.vocab)
    model = Dlrm(a.vocab)
    dense_params = [p for n, p in model.named_parameters() if not n.startswith("emb.")]
    lossf = nn.BCEWithLogitsLoss(reduction="sum")
    losses = []
    t0 = None
    for step in range(a.steps):
        if step == a.warmup:
            if world > 1:
                dist.barrier()
            t0 = time.perf_counter()
        sl = slice(step * lb, (step + 1) * lb)
        for p in model.parameters():
            p.grad = None
        logits = model(dense[sl], ids[sl])
        loss = lossf(logits, labels[sl]) / a.batch
        loss.backward()
        with torch.no_grad():
            if world > 1:
                flat = torch.cat([p.grad.reshape(-1) for p in dense_params] + [loss.detach().reshape(1)])
                dist.all_reduce(flat)
                step_loss = float(flat[-1])
                off = 0
                for p in dense_params:
                    n = p.numel()
                    p.add_(flat[off:off + n].view_as(p), alpha=-a.lr)
                    off += n
                # Sparse rows: every rank applies every rank's row gradients.
                idx = torch.cat([e.weight.grad._indices()[0] for e in model.emb])
                val = torch.cat([e.weight.grad._values() for e in model.emb])
                idxs = [torch.empty_like(idx) for _ in range(world)]
                vals = [torch.empty_like(val) for _ in range(world)]
                dist.all_gather(idxs, idx)
                dist.all_gather(vals, val)
                per = lb
                for r in range(world):
                    for t, e in enumerate(model.emb):
                        e.weight.index_add_(0, idxs[r][t * per:(t + 1) * per],
                                            vals[r][t * per:(t + 1) * per], alpha=-a.lr)
            else:
                step_loss = float(loss)
                for p in dense_params:
                    p.add_(p.grad, alpha=-a.lr)
                for e in model.emb:
                    g = e.weight.grad
                    e.weight.index_add_(0, g._indices()[0], g._values(), alpha=-a.lr)
        losses.append(step_loss)
    elapsed = time.perf_counter() - t0
    if world > 1:
        tt = torch.tensor([elapsed], dtype=torch.float64)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)
        elapsed = float(tt[0])
    if rank == 0:
        sps = (a.steps - a.warmup) * a.batch / elapsed
        print(f"samples/s {sps:.0f}")
        if a.loss_csv:
            with open(a.loss_csv, "w") as f:
                f.write("step,loss\n")
                for i, l in enumerate(losses):
                    f.write(f"{i + 1},{l:.6f}\n")
    if world > 1:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--batch", type=int, default=1024, help="global batch")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--vocab", type=int, default=100000)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--threads", type=int, default=0,
                   help="torch intra-op threads per rank; 0: torch's default with one rank, as the "
                        "reference DLRM runs, and 1 (with a one-thread OpenBLAS) per rank with more")
    p.add_argument("--port", type=int, default=29533)
    p.add_argument("--loss_csv", default="")
    a = p.parse_args()
    if a.batch % a.ranks:
        raise SystemExit(f"--batch {a.batch} does not divide by --ranks {a.ranks}")
    if a.ranks == 1:
        run(0, a)
    else:
        # One thread per rank, as the reference DLRM's multi-rank command runs
        # (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1): the spawned ranks import
        # torch afresh and read these. More threads than cores make torch's and
        # OpenBLAS's spinning workers take turns on the cores.
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        if a.threads == 0:
            a.threads = 1
        import torch.multiprocessing as mp
        mp.spawn(run, args=(a,), nprocs=a.ranks)


if __name__ == "__main__":
    main()
