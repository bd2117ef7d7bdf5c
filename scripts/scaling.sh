#!/usr/bin/env bash
# Weak and strong scaling of lemrt_train over a list of world sizes. Writes
# OUT/scaling.csv (one row per mode and world size) and OUT/scaling.png (when
# python3-matplotlib is installed), plus each run's summary JSON and log.
#
#   scripts/scaling.sh [--config=FILE] [--ranks="1 2 4"] [--mode=both|weak|strong]
#       [--batch_per_chip=1536] [--global_batch=6144] [--steps=30] [--out=out/scaling]
#       [--bin=build/bin] [--hostfile=FILE] [--mpirun_args="..."] [--override=TEXT]
#
# Weak scaling keeps --batch_per_chip samples per chip (global batch = chips x
# it); strong scaling keeps --global_batch. Both must divide by the
# SparseCores of every world size. On a cluster pass --hostfile (and e.g.
# --mpirun_args="--map-by ppr:1:node --bind-to core" for one chip per node,
# or "-x LD_LIBRARY_PATH --mca btl_tcp_if_include eth0" as the network
# needs); locally ranks are oversubscribed on one machine, so the numbers
# show the software's costs, not a cluster's.
#
# CSV columns: mode, world_size, global_batch, steps, samples_per_sec,
# step_ms (mean), host_ms, sc_forward_ms, tc_ms, sc_backward_ms (means per
# step on rank 0), exchange_bytes_per_chip (estimated bytes one chip sends
# per step in the SparseCore all-to-alls: ids after dedup x (24 B COO entry +
# 2 x 4 B x dim for partials and gradients) + the count exchange; dim is
# the mean over features of their table's dim, from the config), efficiency (weak: samples/s per chip vs 1 rank; strong: speedup / chips).
set -euo pipefail
source "$(dirname "$0")/env.sh"
config="$LEMRT_ROOT/examples/configs/dlrm_synthetic.pbtxt"
ranks="1 2 4"
mode="both"
batch_per_chip=1536
global_batch=6144
steps=30
out="$LEMRT_ROOT/out/scaling"
bin="$LEMRT_ROOT/build/bin"
hostfile=""
mpirun_args=""
extra_override=""
for arg in "$@"; do
  case "$arg" in
    --config=*) config="${arg#*=}" ;;
    --ranks=*) ranks="${arg#*=}" ;;
    --mode=*) mode="${arg#*=}" ;;
    --batch_per_chip=*) batch_per_chip="${arg#*=}" ;;
    --global_batch=*) global_batch="${arg#*=}" ;;
    --steps=*) steps="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    --hostfile=*) hostfile="${arg#*=}" ;;
    --mpirun_args=*) mpirun_args="${arg#*=}" ;;
    --override=*) extra_override="${arg#*=}" ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    --config|--ranks|--mode|--batch_per_chip|--global_batch|--steps|--out|--bin|--hostfile|--mpirun_args|--override)
      echo "scaling.sh: $arg needs a value: $arg=VALUE (see --help)" >&2; exit 2 ;;
    *) echo "scaling.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
case "$mode" in
  both) modes="weak strong" ;;
  weak|strong) modes="$mode" ;;
  *) echo "scaling.sh: --mode must be both, weak or strong, not '$mode'" >&2; exit 2 ;;
esac
for w in $ranks; do lemrt_positive_int "every --ranks entry" "$w"; done
[[ -n "${ranks// }" ]] || { echo "scaling.sh: --ranks is empty; give world sizes, e.g. --ranks=\"1 2 4\"" >&2; exit 2; }
lemrt_positive_int --batch_per_chip "$batch_per_chip"
lemrt_positive_int --global_batch "$global_batch"
lemrt_positive_int --steps "$steps"
lemrt_file --config "$config"
[[ -z "$hostfile" ]] || lemrt_file --hostfile "$hostfile"
[[ -x "$bin/lemrt_train" ]] || { echo "scaling.sh: no $bin/lemrt_train (build first or pass --bin)" >&2; exit 1; }
mkdir -p "$out"
launcher=(mpirun --bind-to none)
if [[ -n "$hostfile" ]]; then launcher+=(--hostfile "$hostfile"); else launcher+=(--oversubscribe); fi
# shellcheck disable=SC2206
[[ -n "$mpirun_args" ]] && launcher+=($mpirun_args)

for m in $modes; do
  for w in $ranks; do
    if [[ "$m" == weak ]]; then gb=$((batch_per_chip * w)); else gb="$global_batch"; fi
    name="${m}_np${w}"
    echo "scaling.sh: $m scaling, $w rank(s), global batch $gb" >&2
    lemrt_fg "${launcher[@]}" -np "$w" "$bin/lemrt_train" --config="$config" \
      --override="training { global_batch: $gb steps: $steps eval_every: 0 eval_samples: $gb log_every: 0 } $extra_override" \
      --summary_json="$out/$name.json" > "$out/$name.log" 2>&1 \
      || { grep -m 5 'error' "$out/$name.log" >&2 || tail -5 "$out/$name.log" >&2; echo "scaling.sh: the $name run failed (log: $out/$name.log)" >&2; exit 1; }
  done
done

"$LEMRT_PYTHON" - "$out" "$config" "$modes" "$ranks" <<'PY'
import csv, json, os, re, sys
out, config, modes, ranks = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
text = open(config).read()
dims = {m.group(1): int(m.group(2)) for m in
        re.finditer(r'tables\s*\{[^}]*?name:\s*"([^"]+)"[^}]*?dim:\s*(\d+)', text)}
feats = re.findall(r'features\s*\{[^}]*?table:\s*"([^"]+)"', text)
dim = sum(dims.get(t, 0) for t in feats) / max(1, len(feats))
rows = []
for m in modes:
    base = None
    for w in ranks:
        s = json.load(open(f"{out}/{m}_np{w}.json"))
        W, S = s["world_size"], s["sparse_cores_per_chip"]
        steps = s["steps"]
        ids_per_chip_step = s["ids"]["after_dedup"] / max(1, steps) / W
        exchange = ids_per_chip_step * (24 + 8 * dim) + 8 * S * S * W
        b = s["breakdown_ms"]
        row = dict(mode=m, world_size=W, global_batch=s["global_batch"], steps=steps,
                   samples_per_sec=round(s["samples_per_sec"], 1),
                   step_ms=round(s["step_time_ms"]["mean"], 3),
                   host_ms=round(b["host"], 3), sc_forward_ms=round(b["sc_forward"], 3),
                   tc_ms=round(b["tc"], 3), sc_backward_ms=round(b["sc_backward"], 3),
                   exchange_bytes_per_chip=int(exchange))
        if base is None: base = row
        if m == "weak":
            eff = (row["samples_per_sec"] / W) / max(1e-9, base["samples_per_sec"] / base["world_size"])
        else:
            eff = (row["samples_per_sec"] / max(1e-9, base["samples_per_sec"])) / (W / base["world_size"])
        row["efficiency"] = round(eff, 3)
        rows.append(row)
with open(f"{out}/scaling.csv", "w", newline="") as f:
    wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    wr.writeheader()
    wr.writerows(rows)
print(open(f"{out}/scaling.csv").read(), end="")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print(f"scaling.sh: python3-matplotlib is not installed; wrote {out}/scaling.csv only",
          file=sys.stderr)
    sys.exit(0)
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for m in modes:
    r = [x for x in rows if x["mode"] == m]
    axes[0].plot([x["world_size"] for x in r], [x["samples_per_sec"] for x in r], "o-", label=m)
    axes[1].plot([x["world_size"] for x in r], [x["efficiency"] for x in r], "o-", label=m)
axes[0].set(xlabel="chips (ranks)", ylabel="samples/s", title="throughput")
axes[1].set(xlabel="chips (ranks)", ylabel="efficiency vs 1 rank", title="efficiency", ylim=(0, 1.2))
for a in axes:
    a.legend(); a.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(f"{out}/scaling.png", dpi=100)
print(f"scaling.sh: wrote {out}/scaling.csv and {out}/scaling.png", file=sys.stderr)
PY
