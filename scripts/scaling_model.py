#!/usr/bin/env python3
"""Predicts lemrt's step time on 8..4096 chips from measured per-stage costs.

One machine cannot show cluster behaviour, so this model extrapolates from a
measured run (a lemrt_train --summary_json, e.g. scripts/scaling.sh's
weak_np1.json) and a network described by a bandwidth and a latency.

Assumptions (docs/performance.md, "Scaling experiments"):
  * Compute per chip is linear in the samples per chip: host, SparseCore
    (lookup + update without their exchanges) and TensorCore costs per sample
    are the measured ones; one chip's SparseCores do not slow down with N.
  * Every step has four SparseCore all-to-alls (forward: counts, COO entries,
    partials; backward: gradients). A chip sends per step
      counts   8 B x S^2 x N
      entries  24 B x ids per sample (after dedup) x samples per chip
      partials 4 B x dim x ids per sample x samples per chip   (x2: gradients)
    spread evenly over the N chips (the mod sharding).
  * Topology (--ranks_per_host R, default 1): R chips share their host's one
    link (--bandwidth_gbps is per host, each direction); their peers on the
    same host are reached through shared memory, at no network cost, so the
    fraction (N-R)/N of a chip's bytes leaves the host, and the link carries
    R times that. Every byte costs --wire_overhead (1.05: TCP/IP and Ethernet
    headers of 1500-byte frames) on the wire.
  * Latency: an all-to-all's messages to all peers are in flight together,
    so it costs one latency (not one per peer): an all-to-all takes
    latency + R x bytes x (N-R)/N x overhead / bandwidth.
  * The dense gradients are all-reduced with a ring: 2 (N-1)/N x 4 B x params
    / bandwidth + 2 (N-1) x latency.
  * Stages run one after another (no pipelining overlap), so the step time is
    their sum; --overlap hides the SparseCore stage behind the TensorCore
    stage as the pipelined trainer does (step = host + max(SC, TC) + ...).

Usage:
  scripts/scaling_model.py --summary=out/scaling/weak_np1.json \\
      [--dim=16] [--dense_params=N] [--batch_per_chip=1536 | --global_batch=G] \\
      [--bandwidth_gbps=100] [--latency_us=5] [--ranks_per_host=1] [--out=model.csv]
  scripts/network_scaling.sh measures emulated hosts and prints this model's
  exchange-stage prediction beside each measured cell (predict_exchange_ms).
"""
import argparse
import csv
import json
import os
import re
import sys

# Wire bytes per payload byte on TCP over Ethernet with 1500-byte frames:
# 1514 bytes on the wire (tbf counts the Ethernet header) carry 1448.
WIRE_OVERHEAD = 1514 / 1448


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--summary", required=True, help="lemrt_train --summary_json of a measured run")
    p.add_argument("--dim", type=float, default=None,
                   help="mean embedding dim per feature (default: from --config)")
    p.add_argument("--config", default=None, help="the run's config, to read dims and MLP sizes")
    p.add_argument("--dense_params", type=float, default=None,
                   help="dense parameters (default: from --config's MLPs, else 0)")
    p.add_argument("--batch_per_chip", type=int, default=None, help="weak scaling: samples per chip")
    p.add_argument("--global_batch", type=int, default=None, help="strong scaling: samples per step")
    p.add_argument("--bandwidth_gbps", type=float, default=100.0,
                   help="network bandwidth of each host's link, each way, Gbit/s (default 100)")
    p.add_argument("--latency_us", type=float, default=5.0,
                   help="one-way latency between hosts, us (once per collective round)")
    p.add_argument("--ranks_per_host", type=int, default=1,
                   help="chips (ranks) sharing one host link (default 1)")
    p.add_argument("--wire_overhead", type=float, default=WIRE_OVERHEAD,
                   help="wire bytes per payload byte (default 1.05)")
    p.add_argument("--sparse_cores_per_chip", type=int, default=None)
    p.add_argument("--overlap", action="store_true", help="pipelined SC / TC overlap")
    p.add_argument("--chips", default="8,16,32,64,128,256,512,1024,2048,4096")
    p.add_argument("--out", default=None, help="CSV output (default: stdout table only)")
    return p.parse_args(argv)


def config_shape(path):
    """(mean dim per feature, dense params) from a config's text."""
    text = open(path).read()
    dims = {m.group(1): int(m.group(2)) for m in re.finditer(
        r'tables\s*\{[^}]*?name:\s*"([^"]+)"[^}]*?dim:\s*(\d+)', text)}
    feats = re.findall(r'features\s*\{[^}]*?table:\s*"([^"]+)"', text)
    dim = sum(dims.get(t, 0) for t in feats) / max(1, len(feats))
    nums = lambda key: [int(x) for x in re.findall(r"\d+", (re.search(
        key + r"\s*:\s*\[([^\]]*)\]", text) or re.search("()", "")).group(1))]
    dense_in = int((re.search(r"num_dense_features:\s*(\d+)", text) or
                    re.search("(13)", "13")).group(1))
    bottom, top = nums("bottom_mlp"), nums("top_mlp")
    params = 0
    prev = dense_in
    for w in bottom:
        params += prev * w + w
        prev = w
    if bottom:
        d = bottom[-1]
        f = len(feats) + 1
        prev = d + f * (f - 1) // 2
        for w in top:
            params += prev * w + w
            prev = w
    return dim, params


def all_to_all_bytes(ids_per_chip, dim, sparse_cores, chips):
    """Bytes one chip sends per step in each SparseCore all-to-all (counts,
    COO entries, partials, gradients), to all chips itself included."""
    return [8 * sparse_cores * sparse_cores * chips, 24 * ids_per_chip,
            4 * dim * ids_per_chip, 4 * dim * ids_per_chip]


def all_to_all_ms(chip_bytes, chips, ranks_per_host, bytes_per_ms, latency_ms, overhead):
    """One all-to-all: one latency (the messages to all peers overlap) plus
    the host link's share: its ranks' bytes to chips on other hosts."""
    remote = (chips - ranks_per_host) / chips
    if remote <= 0:
        return 0.0
    return latency_ms + ranks_per_host * chip_bytes * remote * overhead / bytes_per_ms


def rate_mbit(text):
    """tc's rate text ('100mbit', '1gbit', '400Mbit') in Mbit/s."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)bit", text.strip().lower())
    if not m:
        raise ValueError(f"rate '{text}' is not NUMBER[k|m|g]bit")
    return float(m.group(1)) * {"k": 1e-3, "": 1e-6, "m": 1.0, "g": 1e3}[m.group(2)]


def predict_exchange_ms(summary, config, hosts, ranks_per_host, bandwidth_mbit, latency_ms,
                        overhead=WIRE_OVERHEAD):
    """The exchange stage per step of a measured run (its summary JSON) on
    `hosts` hosts x `ranks_per_host` chips, each host with one link of
    bandwidth_mbit each way and latency_ms one way. Returns a dict with
    exchange_ms and remote_bytes_per_host (one direction, per step)."""
    n = summary["world_size"]
    if hosts * ranks_per_host != n:
        raise ValueError(f"{hosts} hosts x {ranks_per_host} ranks is not the run's {n} ranks")
    S = summary["sparse_cores_per_chip"]
    ids = summary["ids"]["after_dedup"] / max(1, summary["steps"]) / n
    dim = config_shape(config)[0]
    bw = bandwidth_mbit * 1e6 / 8 / 1e3  # bytes per ms
    a2a = all_to_all_bytes(ids, dim, S, n)
    ms = sum(all_to_all_ms(x, n, ranks_per_host, bw, latency_ms, overhead) for x in a2a)
    remote = sum(a2a) * (n - ranks_per_host) / n * ranks_per_host
    return dict(exchange_ms=ms, remote_bytes_per_host=remote)


def model(args):
    s = json.load(open(args.summary))
    W = s["world_size"]
    S = args.sparse_cores_per_chip or s["sparse_cores_per_chip"]
    steps = max(1, s["steps"])
    measured_b = s["global_batch"] / W  # samples per chip in the measured run
    b = s["breakdown_ms"]
    per_sample_ms = {k: b[k] / measured_b for k in ("host", "sc_forward", "tc", "sc_backward")}
    ids_per_sample = s["ids"]["after_dedup"] / steps / s["global_batch"]
    dim, params = args.dim, args.dense_params
    if args.config:
        cdim, cparams = config_shape(args.config)
        dim = dim if dim is not None else cdim
        params = params if params is not None else cparams
    dim = dim if dim is not None else 16.0
    params = params or 0.0
    bw = args.bandwidth_gbps * 1e9 / 8 / 1e3  # bytes per ms
    lat = args.latency_us / 1e3  # ms
    rows = []
    for n in [int(x) for x in args.chips.split(",")]:
        if args.global_batch:
            spc = args.global_batch / n
            mode = "strong"
        else:
            spc = args.batch_per_chip or measured_b
            mode = "weak"
        compute = {k: v * spc for k, v in per_sample_ms.items()}
        off = (n - 1) / n
        ids = ids_per_sample * spc
        a2a = all_to_all_bytes(ids, dim, S, n)
        exchange_bytes = sum(a2a) * off
        R = min(args.ranks_per_host, n)
        exchange_ms = sum(all_to_all_ms(x, n, R, bw, lat, args.wire_overhead) for x in a2a)
        # Ring all-reduce over the hosts (the ranks of a host reduce through
        # shared memory first).
        hosts = max(1, n // R)
        allreduce_ms = (2 * (hosts - 1) / hosts * 4 * params * args.wire_overhead / bw
                        + 2 * (hosts - 1) * lat)
        sc = compute["sc_forward"] + compute["sc_backward"] + exchange_ms
        tc = compute["tc"] + allreduce_ms
        step = compute["host"] + (max(sc, tc) if args.overlap else sc + tc)
        rows.append(dict(mode=mode, chips=n, samples_per_chip=round(spc, 1),
                         step_ms=round(step, 3), samples_per_sec=round(spc * n / step * 1e3, 1),
                         compute_ms=round(sum(compute.values()), 3),
                         exchange_ms=round(exchange_ms, 3), allreduce_ms=round(allreduce_ms, 3),
                         exchange_bytes_per_chip=int(exchange_bytes),
                         exchange_share=round((exchange_ms + allreduce_ms) / step, 3)))
    return rows, dict(ids_per_sample=ids_per_sample, dim=dim, dense_params=params,
                      per_sample_ms=per_sample_ms, sparse_cores_per_chip=S)


def main(argv):
    args = parse_args(argv)
    try:
        with open(args.summary) as f:
            json.load(f)["world_size"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"scaling_model.py: --summary '{args.summary}' is not a lemrt_train summary JSON"
                 f" ({e.__class__.__name__}: {e})")
    if args.config is not None and not os.path.isfile(args.config):
        sys.exit(f"scaling_model.py: --config '{args.config}' is not a readable file")
    try:
        chips = [int(c) for c in args.chips.split(",")]
    except ValueError:
        chips = []
    if not chips or min(chips) < 1:
        sys.exit(f"scaling_model.py: --chips must be positive integers separated by commas, got '{args.chips}'")
    for name in ("bandwidth_gbps", "wire_overhead", "ranks_per_host"):
        if getattr(args, name) <= 0:
            sys.exit(f"scaling_model.py: --{name} must be > 0, got {getattr(args, name)}")
    if args.latency_us < 0:
        sys.exit(f"scaling_model.py: --latency_us must be >= 0, got {args.latency_us}")
    rows, info = model(args)
    print(f"# from {args.summary}: {info['ids_per_sample']:.2f} ids/sample after dedup, "
          f"dim {info['dim']:.1f}, {info['dense_params']:.0f} dense params, "
          f"{args.bandwidth_gbps} Gbit/s, {args.latency_us} us latency")
    keys = list(rows[0].keys())
    print(" ".join(f"{k:>14}" for k in keys))
    for r in rows:
        print(" ".join(f"{str(r[k]):>14}" for k in keys))
    dominant = [r["chips"] for r in rows if r["exchange_share"] > 0.5]
    if dominant:
        print(f"# the exchanges take more than half of the step from {dominant[0]} chips on")
    else:
        print("# the exchanges stay below half of the step up to "
              f"{rows[-1]['chips']} chips")
    if args.out:
        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
