#!/usr/bin/env python3
"""The DLRM of scripts/torch_dlrm.py on TorchRec, the library a PyTorch user
would pick for it: scripts/compare_torch.sh measures lemrt against it.

Needs TorchRec and FBGEMM's CPU build (scripts/install_torchrec.sh installs
them into a virtual environment; run this with that environment's python).

Same model, data and update as torch_dlrm.py (and lemrt's Criteo config):

  - the 26 tables x --vocab rows, dim 16, sum pooling, one id per feature per
    sample, are one TorchRec EmbeddingBagCollection, sharded by
    DistributedModelParallel (its planner picks the sharding, as a user gets
    it; --sharding forces one) onto FBGEMM's batched CPU kernels with the
    optimizer fused into the backward pass (plain SGD, --lr: FBGEMM's
    EXACT_SGD);
  - bottom MLP, dot interaction and top MLP are torch_dlrm.py's own modules,
    data-parallel (DistributedDataParallel, gradients averaged), plain SGD;
  - BCE-with-logits, mean over the global batch;
  - init and data from torch_dlrm.py: its model is built from --seed and its
    tables and dense weights are copied in, and each rank reads its shard
    with torch_dlrm.load_shard. So from the same seed both programs start
    from the same weights and see the same ids; their loss curves agree to
    float rounding (--check runs both here and fails if they do not).

Prints "samples/s N" (steps after --warmup, slowest rank), the sharding plan,
and writes the loss of every step (global mean) to --loss_csv as "step,loss".
With --ranks 2 the ranks are processes joined by torch.distributed (gloo), one
torch thread each, as torch_dlrm.py runs them.
"""
import argparse
import copy
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_dlrm  # noqa: E402  (the plain PyTorch model and the data parser)

TABLES = 26
DIM = 16


def import_torchrec():
    """Exits with a sentence naming the install script unless FBGEMM and
    TorchRec import."""
    try:
        import fbgemm_gpu  # noqa: F401  (registers FBGEMM's CPU operators)
        import torchrec  # noqa: F401
    except ImportError as e:
        raise SystemExit(f"torchrec_dlrm: cannot import TorchRec/FBGEMM ({e}); "
                         "install them with scripts/install_torchrec.sh and run this "
                         "with the python it prints")


class TorchRecDlrm(nn.Module):
    """torch_dlrm.Dlrm with its 26 nn.EmbeddingBag replaced by one TorchRec
    EmbeddingBagCollection (tables t0..t25, features c0..c25)."""

    def __init__(self, plain, vocab):
        super().__init__()
        from torchrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType
        from torchrec.modules.embedding_modules import EmbeddingBagCollection
        self.ebc = EmbeddingBagCollection(
            tables=[EmbeddingBagConfig(name=f"t{t}", embedding_dim=DIM, num_embeddings=vocab,
                                       feature_names=[f"c{t}"], pooling=PoolingType.SUM)
                    for t in range(TABLES)],
            device=torch.device("meta"))
        self.bottom = copy.deepcopy(plain.bottom)
        self.top = copy.deepcopy(plain.top)
        self.register_buffer("li", plain.li.clone())
        self.register_buffer("lj", plain.lj.clone())
        self.order = None  # position of c0..c25 in the pooled output, from its keys
        self.in_order = False

    def forward(self, dense, kjt):
        z0 = self.bottom(dense)
        kt = self.ebc(kjt)
        pooled = kt.values().view(-1, TABLES, DIM)
        if self.order is None:  # sharded, the features come in the ranks' order
            self.order = [kt.keys().index(f"c{t}") for t in range(TABLES)]
            self.in_order = self.order == list(range(TABLES))
        if not self.in_order:
            pooled = pooled[:, self.order]
        z = torch.cat([z0.unsqueeze(1), pooled], dim=1)  # [B, 27, d], as torch_dlrm.py
        s = torch.bmm(z, z.transpose(1, 2))
        x = torch.cat([z0, s[:, self.li, self.lj]], dim=1)
        return self.top(x).squeeze(1)


def sharders_and_plan(model, world, sharding, pg):
    """DMP's default sharders and a plan from TorchRec's planner for this
    world on CPU; with `sharding` other than "auto", every table constrained
    to that sharding type."""
    from torchrec.distributed.planner import EmbeddingShardingPlanner
    from torchrec.distributed.planner.types import (KernelConfig, ParameterConstraints,
                                                    TopologyFactory, TrainerConfig)
    from torchrec.distributed.sharding_plan import get_default_sharders
    sharders = get_default_sharders()
    constraints = None
    if sharding != "auto":
        constraints = {f"t{t}": ParameterConstraints(sharding_types=[sharding])
                       for t in range(TABLES)}
    planner = EmbeddingShardingPlanner(
        topology=TopologyFactory.create_topology(
            trainer_config=TrainerConfig(world_size=world, local_world_size=world),
            kernel_config=KernelConfig(compute_device="cpu")),
        constraints=constraints)
    return sharders, planner.collective_plan(model, sharders, pg)


def plan_summary(plan, dmp):
    """The sharding types and kernels the plan gave the tables, the tables per
    rank, and the FBGEMM modules (with their optimizer) that hold them here."""
    kinds, per_rank = {}, {}
    for module_plan in plan.plan.values():
        for p in module_plan.values():
            kind = f"{p.sharding_type}/{p.compute_kernel}"
            kinds[kind] = kinds.get(kind, 0) + 1
            for r in p.ranks:
                per_rank[r] = per_rank.get(r, 0) + 1
    # The lookups are a plain list in the sharded module (not submodules).
    tbes = [m for lookup in getattr(dmp.module.ebc, "_lookups", []) for m in lookup.modules()
            if type(m).__name__.startswith("SplitTableBatched")]
    fbgemm = ", ".join(sorted({f"{type(m).__module__}.{type(m).__name__} ({m.optimizer.name}, "
                               f"{m.current_device})" for m in tbes}))
    return (", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) +
            f"; tables per rank {dict(sorted(per_rank.items()))}; rank 0's tables in "
            f"{len(tbes)} x {fbgemm or '(no FBGEMM module found)'}")


def local_tables(dmp):
    """This rank's pieces of every table as {t: [((row, col), tensor, owned)]}:
    the local shards of a sharded table (views of FBGEMM's weights), or a
    replicated (data-parallel) table whole, owned by rank 0 only (so each
    weight is counted once over the ranks)."""
    out = {}
    for key, value in dmp.state_dict().items():
        if ".embedding_bags." not in key:
            continue
        t = int(key.split(".embedding_bags.")[1].split(".")[0][1:])
        if hasattr(value, "local_shards"):
            out[t] = [(tuple(s.metadata.shard_offsets[:2]), s.tensor, True)
                      for s in value.local_shards()]
        else:
            out[t] = [((0, 0), value, dist.get_rank() == 0)]
    return out


def copy_tables(dmp, plain):
    """Writes torch_dlrm's initial table weights into TorchRec's tables (each
    piece gets its rows and columns of plain.emb[t]); returns the number of
    weights this rank owns and wrote."""
    copied = 0
    with torch.no_grad():
        for t, pieces in local_tables(dmp).items():
            full = plain.emb[t].weight
            for (r, c), tensor, owned in pieces:
                h, w = tensor.shape
                tensor.copy_(full[r:r + h, c:c + w])
                copied += tensor.numel() if owned else 0
    return copied


def build(a, world, pg):
    """The plain torch_dlrm model from --seed, and the TorchRec model with
    the same initial weights under DistributedModelParallel, plus the dense
    optimizer (the tables' SGD is fused into their backward pass)."""
    from torch.distributed.optim import _apply_optimizer_in_backward
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.optim.keyed import CombinedOptimizer, KeyedOptimizerWrapper
    from torchrec.optim.optimizers import in_backward_optimizer_filter
    torch.manual_seed(a.seed)
    plain = torch_dlrm.Dlrm(a.vocab)
    model = TorchRecDlrm(plain, a.vocab)
    _apply_optimizer_in_backward(torch.optim.SGD, model.ebc.parameters(), {"lr": a.lr})
    sharders, plan = sharders_and_plan(model, world, a.sharding, pg)
    dmp = DistributedModelParallel(model, device=torch.device("cpu"), plan=plan,
                                   sharders=sharders)
    copied = copy_tables(dmp, plain)
    total = torch.tensor([copied], dtype=torch.int64)
    dist.all_reduce(total)
    if int(total[0]) != TABLES * a.vocab * DIM:
        raise SystemExit(f"torchrec_dlrm: copied {int(total[0])} table weights into the "
                         f"shards, expected {TABLES * a.vocab * DIM}")
    dense = KeyedOptimizerWrapper(dict(in_backward_optimizer_filter(dmp.named_parameters())),
                                  lambda params: torch.optim.SGD(params, lr=a.lr))
    return plain, dmp, CombinedOptimizer([dmp.fused_optimizer, dense]), plan


def batches(a, rank, world):
    """Per step: labels, dense features and the KeyedJaggedTensor of ids
    (feature-major, one id per sample and feature) of this rank's shard."""
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
    lb = a.batch // world
    labels, dense, ids = torch_dlrm.load_shard(a.data, rank, world, lb, a.steps, a.vocab)
    per_step = ids.view(a.steps, lb, TABLES).transpose(1, 2).contiguous()
    keys = [f"c{t}" for t in range(TABLES)]
    lengths = torch.ones(TABLES * lb, dtype=torch.int32)
    out = []
    for s in range(a.steps):
        kjt = KeyedJaggedTensor(keys=keys, values=per_step[s].view(-1), lengths=lengths)
        out.append((labels[s * lb:(s + 1) * lb], dense[s * lb:(s + 1) * lb], ids[s * lb:(s + 1) * lb],
                    kjt))
    return out


def global_mean(values, world):
    t = torch.tensor(values, dtype=torch.float64)
    if world > 1:
        dist.all_reduce(t)
    return (t / world).tolist()


def check_step(a, plain, data, lossf, world):
    """One plain torch_dlrm step (full tables on every rank, dense gradients
    and row updates of all ranks summed): --check's reference. Returns the
    global mean loss."""
    labels, dense, ids, _ = data
    for p in plain.parameters():
        p.grad = None
    loss = lossf(plain(dense, ids), labels)
    (loss / world).backward()
    with torch.no_grad():
        for n, p in plain.named_parameters():
            if n.startswith("emb."):
                # Uncoalesced: one row per sample, the same count on every rank.
                idx, val = p.grad._indices()[0], p.grad._values()
                if world > 1:
                    idxs = [torch.empty_like(idx) for _ in range(world)]
                    vals = [torch.empty_like(val) for _ in range(world)]
                    dist.all_gather(idxs, idx)
                    dist.all_gather(vals, val)
                    idx, val = torch.cat(idxs), torch.cat(vals)
                p.index_add_(0, idx, val, alpha=-a.lr)
            else:
                if world > 1:
                    dist.all_reduce(p.grad)
                p.add_(p.grad, alpha=-a.lr)
    return global_mean([loss.item()], world)[0]


def table_gap(dmp, plain, world):
    """Largest |TorchRec weight - torch_dlrm weight| over all tables."""
    gap = 0.0
    with torch.no_grad():
        for t, shards in local_tables(dmp).items():
            full = plain.emb[t].weight
            for (r, c), tensor, _ in shards:
                h, w = tensor.shape
                gap = max(gap, float((tensor - full[r:r + h, c:c + w]).abs().max()))
    g = torch.tensor([gap])
    if world > 1:
        dist.all_reduce(g, op=dist.ReduceOp.MAX)
    return float(g[0])


def run(rank, a):
    world = a.ranks
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(a.port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    plain, dmp, opt, plan = build(a, world, dist.group.WORLD)
    data = batches(a, rank, world)
    lossf = nn.BCEWithLogitsLoss()
    losses, check_losses = [], []
    t0 = None
    for step in range(a.steps):
        if step == a.warmup:
            dist.barrier()
            t0 = time.perf_counter()
        labels, dense, _, kjt = data[step]
        opt.zero_grad()
        loss = lossf(dmp(dense, kjt), labels)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if a.check:
            check_losses.append(check_step(a, plain, data[step], lossf, world))
    elapsed = time.perf_counter() - t0
    tt = torch.tensor([elapsed], dtype=torch.float64)
    dist.all_reduce(tt, op=dist.ReduceOp.MAX)
    losses = global_mean([float(l) for l in losses], world)
    if rank == 0:
        print(f"torch {torch.__version__} fbgemm_gpu {fbgemm_version()} torchrec "
              f"{torchrec_version()} threads {torch.get_num_threads()}")
        print(f"plan {plan_summary(plan, dmp)}")
        print(f"samples/s {(a.steps - a.warmup) * a.batch / float(tt[0]):.0f}")
        if a.loss_csv:
            with open(a.loss_csv, "w") as f:
                f.write("step,loss\n")
                for i, l in enumerate(losses):
                    f.write(f"{i + 1},{l:.6f}\n")
    ok = True
    if a.check:
        gap = table_gap(dmp, plain, world)
        worst = max(abs(x - y) for x, y in zip(losses, check_losses))
        ok = worst <= a.check_tol and gap <= a.check_tol
        if rank == 0:
            print(f"check: {a.steps} steps, largest |loss(torchrec) - loss(torch_dlrm)| "
                  f"{worst:.3g}, largest table difference {gap:.3g} (limit {a.check_tol:g}); "
                  f"first loss {losses[0]:.6f} vs {check_losses[0]:.6f}, last "
                  f"{losses[-1]:.6f} vs {check_losses[-1]:.6f}: {'ok' if ok else 'MISMATCH'}")
    dist.destroy_process_group()
    if not ok:
        raise SystemExit(1)


def fbgemm_version():
    import fbgemm_gpu
    return getattr(fbgemm_gpu, "__version__", "?")


def torchrec_version():
    import torchrec
    return getattr(torchrec, "__version__", "?")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="Criteo TSV (scripts/gen_criteo_tsv.py)")
    p.add_argument("--batch", type=int, default=1024, help="global batch")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--vocab", type=int, default=100000)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--threads", type=int, default=0,
                   help="torch intra-op threads per rank; 0: torch's default with one rank, "
                        "1 (with one OpenMP/BLAS thread) per rank with more, as torch_dlrm.py")
    p.add_argument("--sharding", default="auto",
                   choices=["auto", "table_wise", "column_wise", "table_column_wise", "data_parallel"],
                   help="every table's sharding type (TorchRec allows these on CPU); auto: "
                        "TorchRec's planner decides")
    p.add_argument("--port", type=int, default=29537)
    p.add_argument("--loss_csv", default="")
    p.add_argument("--check", action="store_true",
                   help="also train torch_dlrm.py's model step by step beside it and fail "
                        "unless losses and final tables agree within --check_tol (samples/s then "
                        "counts both models' steps)")
    p.add_argument("--check_tol", type=float, default=1e-4)
    a = p.parse_args()
    if a.batch % a.ranks:
        raise SystemExit(f"--batch {a.batch} does not divide by --ranks {a.ranks}")
    if a.warmup >= a.steps:
        raise SystemExit(f"--warmup {a.warmup} must be below --steps {a.steps}")
    import_torchrec()
    if a.ranks == 1:
        run(0, a)
    else:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        os.environ.setdefault("MKL_NUM_THREADS", "1")
        if a.threads == 0:
            a.threads = 1
        import torch.multiprocessing as mp
        mp.spawn(run, args=(a,), nprocs=a.ranks)


if __name__ == "__main__":
    main()
