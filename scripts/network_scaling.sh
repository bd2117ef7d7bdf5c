#!/usr/bin/env bash
# Scaling on a shaped network: sweeps emulated hosts x ranks per host x link
# bandwidth (x link delay, where the kernel has sch_netem) with
# scripts/cluster_emulator.sh and scripts/lemrt_run, and compares the
# exchange stage with scripts/scaling_model.py's topology prediction. Writes
# OUT/network_scaling.csv, OUT/network_scaling.png (python3-matplotlib) and
# each run's summary JSON and log. Needs root (network namespaces).
#
#   scripts/network_scaling.sh [--config=FILE] [--hosts="2"] [--ranks_per_host="1 2"]
#       [--rates="100mbit 400mbit"] [--delays_ms="0"] [--batch_per_chip=384]
#       [--steps=20] [--repeats=1] [--out=out/network_scaling] [--bin=build/bin]
#       [--override=TEXT]
#
# Weak scaling: every chip keeps --batch_per_chip samples. Within a host the
# ranks talk through shared memory, between hosts over TCP on the host's one
# shaped link, which its ranks share. On a machine with few cores the
# ranks' compute is slow and noisy (several ranks per core), so compare the
# exchange stage (exchange_ms: the SparseCore all-to-alls, inside
# sc_forward_ms / sc_backward_ms), not samples/s.
#
# CSV columns: hosts, ranks_per_host, world_size, rate, delay_ms, global_batch,
# steps, samples_per_sec, step_ms, sc_forward_ms, sc_backward_ms, tc_ms,
# exchange_ms (means per step on rank 0; with --repeats K, of the run whose
# exchange is the median, and exchange_ms_min / _max over the K runs), link_mb_per_step (host 0's link,
# both directions, from its switch port's counters, start-up and the final
# evaluation included, / steps), predicted_link_mb_per_step (the model's
# exchange bytes over host 0's link, both directions), predicted_exchange_ms (scaling_model.py --hosts --ranks_per_host) and
# predicted_over_measured.
set -euo pipefail
source "$(dirname "$0")/env.sh"
config="$LEMRT_ROOT/examples/configs/dlrm_synthetic.pbtxt"
hosts_list="2"
rph_list="1 2"
rates="100mbit 400mbit"
delays="0"
batch_per_chip=384
steps=20
repeats=1
out="$LEMRT_ROOT/out/network_scaling"
bin="$LEMRT_ROOT/build/bin"
extra_override=""
for arg in "$@"; do
  case "$arg" in
    --config=*) config="${arg#*=}" ;;
    --hosts=*) hosts_list="${arg#*=}" ;;
    --ranks_per_host=*) rph_list="${arg#*=}" ;;
    --rates=*) rates="${arg#*=}" ;;
    --delays_ms=*) delays="${arg#*=}" ;;
    --batch_per_chip=*) batch_per_chip="${arg#*=}" ;;
    --steps=*) steps="${arg#*=}" ;;
    --repeats=*) repeats="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    --override=*) extra_override="${arg#*=}" ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    --config|--hosts|--ranks_per_host|--rates|--delays_ms|--batch_per_chip|--steps|--repeats|--out|--bin|--override)
      echo "network_scaling.sh: $arg needs a value: $arg=VALUE (see --help)" >&2; exit 2 ;;
    *) echo "network_scaling.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
for v in $hosts_list; do lemrt_positive_int "every --hosts entry" "$v"; done
for v in $rph_list; do lemrt_positive_int "every --ranks_per_host entry" "$v"; done
for v in $delays; do
  [[ "$v" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "network_scaling.sh: every --delays_ms entry must be a number >= 0, got '$v'" >&2; exit 2; }
done
for v in $rates; do
  [[ "${v,,}" =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]] \
    || { echo "network_scaling.sh: every --rates entry must be NUMBER[k|m|g]bit (100mbit, 1gbit), got '$v'" >&2; exit 2; }
done
for l in hosts_list rph_list rates delays; do
  [[ -n "${!l// }" ]] || { echo "network_scaling.sh: an empty list (--hosts, --ranks_per_host, --rates and --delays_ms need one value or more)" >&2; exit 2; }
done
lemrt_positive_int --batch_per_chip "$batch_per_chip"
lemrt_positive_int --steps "$steps"
lemrt_positive_int --repeats "$repeats"
lemrt_file --config "$config"
[[ -x "$bin/lemrt_train" ]] || { echo "network_scaling.sh: no $bin/lemrt_train (build first or pass --bin)" >&2; exit 1; }
emu="$LEMRT_ROOT/scripts/cluster_emulator.sh"
if [[ "$delays" != 0 ]] && ! "$emu" has-netem; then
  echo "network_scaling.sh: this kernel has no sch_netem: measuring without link delay (--delays_ms ignored)" >&2
  delays=0
fi
prefix="ns$$"
state="${LEMRT_CLUSTER_STATE:-/run/lemrt-cluster}/$prefix"
trap '"$emu" --prefix="$prefix" down' EXIT
mkdir -p "$out"
: > "$out/runs.txt"

# run_cell NAME HOSTS RANKS_PER_HOST RATE DELAY_MS: one run on a fresh
# emulated cluster; appends "NAME H R RATE DELAY LINK_BYTES" to runs.txt.
run_cell() {
  local name="$1" h="$2" r="$3" rate="$4" d="$5"
  local gb=$((batch_per_chip * h * r)) shape=(--rate="$4") bytes
  echo "network_scaling.sh: $h hosts x $r ranks, $rate, delay $d ms, global batch $gb" >&2
  "$emu" --prefix="$prefix" up "$h" --slots="$r"
  [[ "$d" == 0 ]] || shape+=(--delay="$d")
  "$emu" --prefix="$prefix" shape all "${shape[@]}"
  lemrt_fg timeout 600 "$emu" --prefix="$prefix" exec "$prefix-h0" "$LEMRT_ROOT/scripts/lemrt_run" \
    --hostfile "$state/hostfile" --network "$(cat "$state/subnet")" \
    --mpirun-args --mca plm_rsh_agent "$state/rsh" --mca btl tcp,vader,self -- \
    "$bin/lemrt_train" --config="$config" \
    --override="training { global_batch: $gb steps: $steps eval_every: 0 eval_samples: $gb log_every: 0 } $extra_override" \
    --summary_json="$out/$name.json" > "$out/$name.log" 2>&1 \
    || { grep -m 5 error "$out/$name.log" >&2 || tail -5 "$out/$name.log" >&2; echo "network_scaling.sh: the $name run failed (log: $out/$name.log)" >&2; exit 1; }
  # Host 0's switch port, both directions.
  bytes=$(ip -n "$prefix-sw" -s -j link show h0 | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["stats64"]
print(s["rx"]["bytes"] + s["tx"]["bytes"])')
  echo "$name $h $r $rate $d $bytes" >> "$out/runs.txt"
  "$emu" --prefix="$prefix" down
}

for h in $hosts_list; do
  for r in $rph_list; do
    for rate in $rates; do
      for d in $delays; do
        for ((k = 1; k <= repeats; k++)); do
          run_cell "h${h}_r${r}_${rate}_d${d}_k${k}" "$h" "$r" "$rate" "$d"
        done
      done
    done
  done
done

"$LEMRT_PYTHON" - "$out" "$config" "$LEMRT_ROOT/scripts" <<'PY'
import csv, json, sys
out, config, scripts = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, scripts)
import scaling_model
cells = {}
for line in open(f"{out}/runs.txt"):
    name, h, r, rate, d, link_bytes = line.split()
    s = json.load(open(f"{out}/{name}.json"))
    cells.setdefault((h, r, rate, d), []).append((s["breakdown_ms"]["exchange"], s, int(link_bytes)))
rows = []
for (h, r, rate, d), runs in cells.items():
    runs.sort(key=lambda x: x[0])
    _, s, link_bytes = runs[len(runs) // 2]
    b = s["breakdown_ms"]
    mbit = scaling_model.rate_mbit(rate)
    pred = scaling_model.predict_exchange_ms(s, config, hosts=int(h), ranks_per_host=int(r),
                                             bandwidth_mbit=mbit, latency_ms=float(d))
    rows.append(dict(hosts=int(h), ranks_per_host=int(r), world_size=s["world_size"], rate=rate,
                     delay_ms=float(d), global_batch=s["global_batch"], steps=s["steps"],
                     samples_per_sec=round(s["samples_per_sec"], 1),
                     step_ms=round(s["step_time_ms"]["mean"], 2),
                     sc_forward_ms=round(b["sc_forward"], 2), sc_backward_ms=round(b["sc_backward"], 2),
                     tc_ms=round(b["tc"], 2), exchange_ms=round(b["exchange"], 2),
                     exchange_ms_min=round(runs[0][0], 2), exchange_ms_max=round(runs[-1][0], 2),
                     link_mb_per_step=round(int(link_bytes) / 1e6 / s["steps"], 3),
                     predicted_link_mb_per_step=round(
                         2 * pred["remote_bytes_per_host"] * scaling_model.WIRE_OVERHEAD / 1e6, 3),
                     predicted_exchange_ms=round(pred["exchange_ms"], 2),
                     predicted_over_measured=round(pred["exchange_ms"] / max(1e-9, b["exchange"]), 3)))
with open(f"{out}/network_scaling.csv", "w", newline="") as f:
    wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    wr.writeheader()
    wr.writerows(rows)
print(open(f"{out}/network_scaling.csv").read(), end="")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print(f"network_scaling.sh: python3-matplotlib is not installed; wrote {out}/network_scaling.csv only",
          file=sys.stderr)
    sys.exit(0)
fig, ax = plt.subplots(figsize=(7, 4.5))
labels = [f"{x['hosts']}x{x['ranks_per_host']}\n{x['rate']}" + (f"\n{x['delay_ms']:g} ms" if x["delay_ms"] else "")
          for x in rows]
pos = range(len(rows))
ax.bar([p - 0.2 for p in pos], [x["exchange_ms"] for x in rows], 0.4, label="measured")
ax.bar([p + 0.2 for p in pos], [x["predicted_exchange_ms"] for x in rows], 0.4, label="model")
ax.set_xticks(list(pos))
ax.set_xticklabels(labels, fontsize=8)
ax.set(xlabel="hosts x ranks per host, link", ylabel="exchange stage, ms per step",
       title="SparseCore exchange on emulated hosts: measured vs model")
ax.legend(); ax.grid(alpha=0.3, axis="y")
fig.tight_layout()
fig.savefig(f"{out}/network_scaling.png", dpi=100)
print(f"network_scaling.sh: wrote {out}/network_scaling.csv and {out}/network_scaling.png", file=sys.stderr)
PY
