#!/usr/bin/env bash
# Emulates a small cluster on this Linux machine, to rehearse a multi-host
# lemrt job, reproduce a network fault or measure scaling on a shaped link
# (docs/cluster.md). Needs root (network namespaces); uses only ip, tc,
# unshare and nsenter.
#
#   scripts/cluster_emulator.sh up N [--prefix=lemrt] [--slots=2] [--rate=RATE]
#                                    [--tcp-retries2=K] [--hostname=NAME]
#   scripts/cluster_emulator.sh shape HOST|all --rate=RATE [--delay=MS] [--loss=PCT]
#   scripts/cluster_emulator.sh cut HOST [--data] | heal HOST [--data] | kill HOST
#   scripts/cluster_emulator.sh exec HOST COMMAND [ARGS...]
#   scripts/cluster_emulator.sh status | down [quiet]  (all take --prefix)
#   scripts/cluster_emulator.sh check                  (exit 0 when it can run here)
#   scripts/cluster_emulator.sh has-netem              (exit 0 when delay/loss can be shaped)
#
# Host i is `PREFIX-hI`: a network namespace of that name and a UTS namespace
# with that hostname (a bind mount under the state directory, so no holder
# process), its eth0 at 10.213.0.(10+i)/24 on one bridge and its eth1 at
# 10.213.1.(10+i)/24 on a second one (a separate data network, for jobs that
# put MPI's traffic there: `lemrt_run --data-network`), both inside a private
# switch namespace PREFIX-sw. Every host has a temporary directory of its own
# (TMPDIR=STATE/tmp/PREFIX-hI, as each real host has its own /tmp: Open MPI
# keeps its session directory there, named after the hostname). Nothing is added to the machine's own namespace:
# no address, no route to outside, no NAT, so traffic stays among the hosts.
# `up` writes STATE/hostfile (PREFIX-hI slots=S) and STATE/rsh, an rsh agent
# for Open MPI (`mpirun --mca plm_rsh_agent STATE/rsh`) that runs a command
# in the named host; `exec` does the same for you. STATE is
# /run/lemrt-cluster/PREFIX (LEMRT_CLUSTER_STATE overrides /run/lemrt-cluster).
# Run mpirun inside a host (`exec PREFIX-h0 ...`), as on a cluster's first
# node, so the daemons it starts reach it over the bridge.
#
# Links: `shape` puts a tbf (token bucket) of RATE (tc units: 100mbit, 1gbit)
# on both directions of each of the host's two links, and netem delay/loss
# where the kernel has sch_netem (else it says so in one line and shapes the
# bandwidth only). `cut` takes the host's switch ports down (a dead NIC or
# switch port: packets vanish, no error reaches the sockets; `--data`: the
# data network's port only), `heal` brings them back, `kill` SIGKILLs every
# process in the host's network namespace.
#
# --hostname=NAME gives every host the same hostname (a careless container
# setup; the hosts keep their own namespaces and addresses).
# --tcp-retries2 sets the hosts' net.ipv4.tcp_retries2 (Linux's default 15
# keeps a TCP connection with unacknowledged data to a vanished peer open for
# ~15 minutes; 5 ends it after ~13 s, the tuning docs/cluster.md suggests).
#
# `up` first removes what a crashed earlier run of the same prefix left, and
# removes everything again if it fails half-way; `down` (idempotent) kills
# the hosts' processes and removes the namespaces, the bridges and the state.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
state_root="${LEMRT_CLUSTER_STATE:-/run/lemrt-cluster}"
subnet=10.213.0
data_subnet=10.213.1
prefix=lemrt

die() { echo "cluster_emulator: $*" >&2; exit 1; }
bad() { echo "cluster_emulator: $*" >&2; exit 2; }  # a bad argument
note() { echo "cluster_emulator: $*" >&2; }

# check: why this machine cannot emulate hosts (nothing when it can).
check() {
  [[ "$(id -u)" == 0 ]] || { echo "needs root (it creates network namespaces)"; return; }
  local t
  for t in ip tc unshare nsenter; do
    command -v "$t" >/dev/null || { echo "needs '$t' (iproute2 / util-linux)"; return; }
  done
  local probe="lemrt-probe-$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "network namespaces are not allowed here ('ip netns add' failed)"; return
  fi
  if ! ip -n "$probe" link add name probe0 type veth peer name probe1 2>/dev/null \
     || ! ip -n "$probe" link add name probebr type bridge 2>/dev/null; then
    ip netns del "$probe"; echo "the kernel lacks veth or bridge devices"; return
  fi
  ip netns del "$probe"
}

hosts() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${prefix}-h[0-9]+$" | sort -V || true; }
host_index() { [[ "$1" =~ ^${prefix}-h([0-9]+)$ ]] || die "no host '$1' (hosts: $(hosts | tr '\n' ' '))"; echo "${BASH_REMATCH[1]}"; }
need_host() { host_index "$1" >/dev/null; ip netns list | grep -qw "^$1" || die "no host '$1' (is the cluster up? hosts: $(hosts | tr '\n' ' '))"; }
sw() { ip -n "${prefix}-sw" "$@"; }

# netem_available: 0 when the kernel has sch_netem (probed on a veth in a
# scratch namespace; tc says "Specified qdisc kind is unknown" otherwise).
netem_available() {
  local probe="lemrt-netem-$$" ok=1
  ip netns add "$probe" || return 1
  ip -n "$probe" link add name probe0 type veth peer name probe1 \
    && ip netns exec "$probe" tc qdisc add dev probe0 root netem delay 1ms 2>/dev/null && ok=0
  ip netns del "$probe"
  return $ok
}

# shape_dev NS DEV RATE DELAY LOSS: egress shaping of one side of a link.
shape_dev() {
  local ns="$1" dev="$2" rate="$3" delay="$4" loss="$5" parent="root"
  ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
  if [[ -n "$delay$loss" ]]; then
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem \
      ${delay:+delay "${delay}ms"} ${loss:+loss "${loss}%"} limit 100000
    parent="parent 1:1"
  fi
  [[ -z "$rate" ]] && return
  # A burst of at least one timer tick's worth of bytes (tbf needs it to
  # reach the rate) and a queue of ~200 ms, so TCP sees a slow link rather
  # than drops.
  ip netns exec "$ns" tc qdisc add dev "$dev" $parent handle 2: tbf rate "$rate" \
    burst 256kb latency 200ms
}

# check_rate COMMAND RATE: RATE is empty or a tc rate (100mbit, 1gbit, 10mbps).
check_rate() {
  [[ -z "$2" || "${2,,}" =~ ^[0-9]+(\.[0-9]+)?([kmgt]i?)?(bit|bps)$ ]] \
    || bad "$1: --rate must be a tc rate such as 100mbit or 1gbit, got '$2'"
}

cmd_shape() {
  local target="$1" rate="" delay="" loss=""; shift
  for a in "$@"; do
    case "$a" in
      --rate=*) rate="${a#*=}" ;;
      --delay=*) delay="${a#*=}" ;;
      --loss=*) loss="${a#*=}" ;;
      *) bad "shape: unknown argument '$a'" ;;
    esac
  done
  [[ -z "$delay" || "$delay" =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad "shape: --delay must be milliseconds (a number >= 0), got '$delay'"
  [[ -z "$loss" || "$loss" =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad "shape: --loss must be a percentage (a number >= 0), got '$loss'"
  check_rate shape "$rate"
  if [[ -n "$delay$loss" ]] && ! netem_available; then
    note "this kernel has no sch_netem: delay/loss not applied, shaping bandwidth only"
    delay="" loss=""
  fi
  local list h i
  if [[ "$target" == all ]]; then list="$(hosts)"; else need_host "$target"; list="$target"; fi
  for h in $list; do
    i="$(host_index "$h")"
    shape_dev "$h" eth0 "$rate" "$delay" "$loss"          # host -> switch
    shape_dev "${prefix}-sw" "h$i" "$rate" "$delay" "$loss" # switch -> host
    shape_dev "$h" eth1 "$rate" "$delay" "$loss"
    shape_dev "${prefix}-sw" "d$i" "$rate" "$delay" "$loss"
  done
}

write_agent() {
  local dir="$1"
  # Open MPI runs AGENT [ssh-style options] HOST COMMAND...; the words of
  # COMMAND form one shell command line, as ssh would pass them.
  cat > "$dir/rsh" <<EOF
#!/usr/bin/env bash
# rsh agent for the emulated cluster '$prefix' (scripts/cluster_emulator.sh).
while [[ "\${1:-}" == -* ]]; do shift; done
host="\$1"; shift
exec "$here/cluster_emulator.sh" --prefix=$prefix exec "\$host" /bin/sh -c "\$*"
EOF
  chmod +x "$dir/rsh"
}

cmd_up() {
  local n="$1" slots=2 rate="" retries="" same_name=""; shift
  [[ "$n" =~ ^[1-9][0-9]?$ ]] || bad "up: N must be 1..99 hosts, got '$n'"
  for a in "$@"; do
    case "$a" in
      --slots=*) slots="${a#*=}" ;;
      --rate=*) rate="${a#*=}" ;;
      --tcp-retries2=*) retries="${a#*=}" ;;
      --hostname=*) same_name="${a#*=}" ;;
      *) bad "up: unknown argument '$a'" ;;
    esac
  done
  [[ "$slots" =~ ^[1-9][0-9]{0,3}$ ]] || bad "up: --slots must be a positive integer, got '$slots'"
  [[ -z "$retries" || "$retries" =~ ^[0-9]{1,3}$ ]] || bad "up: --tcp-retries2 must be a non-negative integer, got '$retries'"
  check_rate up "$rate"
  local why; why="$(check)"
  [[ -z "$why" ]] || die "cannot emulate hosts: $why"
  cmd_down quiet
  trap 'note "up failed; removing what it made"; cmd_down quiet' EXIT
  local dir="$state_root/$prefix" i h
  mkdir -p "$dir/uts"
  : > "$dir/hostfile"
  ip netns add "${prefix}-sw"
  sw link set lo up
  sw link add name br0 type bridge
  sw link set br0 up
  sw link add name br1 type bridge
  sw link set br1 up
  for ((i = 0; i < n; i++)); do
    h="${prefix}-h$i"
    ip netns add "$h"
    ip -n "$h" link set lo up
    sw link add name "h$i" type veth peer name eth0 netns "$h"
    sw link set "h$i" master br0 up
    ip -n "$h" addr add "$subnet.$((10 + i))/24" dev eth0
    ip -n "$h" link set eth0 up
    sw link add name "d$i" type veth peer name eth1 netns "$h"
    sw link set "d$i" master br1 up
    ip -n "$h" addr add "$data_subnet.$((10 + i))/24" dev eth1
    ip -n "$h" link set eth1 up
    [[ -z "$retries" ]] || ip netns exec "$h" sysctl -q -w net.ipv4.tcp_retries2="$retries"
    touch "$dir/uts/$h"
    mkdir -p "$dir/tmp/$h"
    unshare --uts="$dir/uts/$h" hostname "${same_name:-$h}"
    echo "$h slots=$slots" >> "$dir/hostfile"
  done
  write_agent "$dir"
  echo "$subnet.0/24" > "$dir/subnet"
  echo "$data_subnet.0/24" > "$dir/data_subnet"
  # Shaping is part of `up`: when tc fails, the cluster goes too (it stayed up).
  [[ -z "$rate" ]] || cmd_shape all --rate="$rate"
  trap - EXIT
  note "$n hosts up (${prefix}-h0..$((n - 1)), $subnet.10-$((9 + n)), $slots slots each); hostfile $dir/hostfile, rsh agent $dir/rsh"
}

cmd_exec() {
  local h="$1"; shift
  need_host "$h"
  TMPDIR="$state_root/$prefix/tmp/$h" exec nsenter --net="/run/netns/$h" --uts="$state_root/$prefix/uts/$h" -- "$@"
}

# host_pids HOST: the processes in the host's network namespace.
host_pids() { ip netns pids "$1" 2>/dev/null || true; }

cmd_kill() {
  need_host "$1"
  local pids; pids="$(host_pids "$1")"
  [[ -n "$pids" ]] && kill -KILL $pids 2>/dev/null || true
  note "killed $(echo $pids | wc -w) process(es) on $1"
}

# cmd_link up|down HOST [--data]: both of the host's switch ports, or the
# data network's only.
cmd_link() {
  local state="$1" h="$2" which="${3:-}" i
  need_host "$h"
  i="$(host_index "$h")"
  case "$which" in
    "") sw link set "h$i" "$state"; sw link set "d$i" "$state"; note "$h: links $state" ;;
    --data) sw link set "d$i" "$state"; note "$h: data link $state" ;;
    *) die "cut/heal: unknown argument '$which' (only --data)" ;;
  esac
}

cmd_status() {
  local h i
  for h in $(hosts); do
    i="$(host_index "$h")"
    printf '%s %s link %s, data link %s, %s process(es), qdisc: %s\n' "$h" "$subnet.$((10 + i))" \
      "$(sw -br link show "h$i" | awk '{print $2}')" "$(sw -br link show "d$i" | awk '{print $2}')" \
      "$(host_pids "$h" | wc -l)" \
      "$(ip netns exec "$h" tc qdisc show dev eth0 | awk '{print $2}' | paste -sd+)"
  done
}

cmd_down() {
  local h pids any=""
  for h in $(hosts) $(ip netns list 2>/dev/null | awk '{print $1}' | grep -x "${prefix}-sw" || true); do
    any=1
    pids="$(host_pids "$h")"
    [[ -n "$pids" ]] && kill -KILL $pids 2>/dev/null || true
    ip netns del "$h" 2>/dev/null || true
  done
  local dir="$state_root/$prefix" f
  if [[ -d "$dir" ]]; then
    any=1
    for f in "$dir"/uts/*; do
      [[ -e "$f" ]] && { umount "$f" 2>/dev/null || true; }
    done
    rm -rf "$dir"
  fi
  [[ -n "$any" && "${1:-}" != quiet ]] && note "removed cluster '$prefix'"
  return 0
}

args=()
for a in "$@"; do
  case "$a" in
    --prefix=*) prefix="${a#*=}" ;;
    *) args+=("$a") ;;
  esac
done
[[ "$prefix" =~ ^[a-z][a-z0-9]{0,11}$ ]] || die "--prefix must be 1-12 lowercase letters/digits, starting with a letter"
set -- "${args[@]}"
action="${1:-}"; shift || true
case "$action" in
  check) why="$(check)"; [[ -z "$why" ]] || { echo "cluster_emulator: cannot run here: $why"; exit 1; } ;;
  up) [[ $# -ge 1 ]] || die "usage: up N"; cmd_up "$@" ;;
  down) cmd_down "${1:-}" ;;
  shape) [[ $# -ge 1 ]] || die "usage: shape HOST|all --rate=RATE"; cmd_shape "$@" ;;
  cut) [[ $# -ge 1 && $# -le 2 ]] || die "usage: cut HOST [--data]"; cmd_link down "$@" ;;
  heal) [[ $# -ge 1 && $# -le 2 ]] || die "usage: heal HOST [--data]"; cmd_link up "$@" ;;
  kill) [[ $# -eq 1 ]] || die "usage: kill HOST"; cmd_kill "$1" ;;
  exec) [[ $# -ge 2 ]] || die "usage: exec HOST COMMAND..."; cmd_exec "$@" ;;
  status) cmd_status ;;
  has-netem) netem_available ;;
  -h|--help|"") awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" ;;
  *) die "unknown action '$action' (see --help)" ;;
esac
