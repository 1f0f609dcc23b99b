#!/usr/bin/env bash
# Minimal reproducer of bench/kernel/notes/KERNEL_BUG.md (root): plain TCP, no MPTCP, no mpcc code.
# Registers ssbug.bpf.c (a Reno clone, tcp_congestion_ops "ssbug_reno") with bpftool, runs CONNS
# TCP connections with it for SECS seconds through a 20 Mbit/s tbf (30 kB queue: drops at the
# sender, tcp_enter_cwr from the transmit path, RTOs) between two network namespaces, and prints
# how often the kernel left snd_ssthresh above 0x7fffffff, a value ssthresh() cannot return,
# next to how often ssthresh() ran and in whose task context the callbacks ran.
#   bench/kernel/notes/ssbug/run.sh [--conns N] [--secs S] [--cpu LIST] [--stats] [--no-repair] [--json FILE]
#     --cpu LIST   run sender and receiver under taskset -c LIST (default: no pinning)
#     --stats      kernel.bpf_stats_enabled=1 during the run (restored), for run_cnt of ssthresh()
#     --no-repair  leave the bad values in place (the window then grows to ~10^9 packets)
# Everything it makes (namespaces, the struct_ops, the sysctl) is removed on exit and on Ctrl-C.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
HERE=$(cd "$(dirname "$0")" && pwd)
die() { echo "ssbug/run.sh: $*" >&2; exit 2; }

CONNS=20 SECS=15 CPU="" STATS=0 REPAIR=1 JSON=""
while [ $# -gt 0 ]; do
  case "$1" in
    --conns) CONNS=${2:-}; shift 2 || die "--conns needs a number (e.g. --conns 20)";;
    --secs) SECS=${2:-}; shift 2 || die "--secs needs a number (e.g. --secs 15)";;
    --cpu) CPU=${2:-}; shift 2 || die "--cpu needs a CPU list (e.g. --cpu 0)";;
    --stats) STATS=1; shift;;
    --no-repair) REPAIR=0; shift;;
    --json) JSON=${2:-}; shift 2 || die "--json needs a file name";;
    *) die "unknown argument '$1' (fix: see the usage at the top of $0)";;
  esac
done
[[ "$CONNS" =~ ^[1-9][0-9]{0,3}$ ]] || die "--conns '$CONNS' is not a number of connections 1..9999 (fix: e.g. --conns 20)"
[[ "$SECS" =~ ^[1-9][0-9]{0,3}$ ]] || die "--secs '$SECS' is not a whole number of seconds 1..9999 (fix: e.g. --secs 15)"
[ -z "$CPU" ] || [[ "$CPU" =~ ^[0-9,-]+$ ]] || die "--cpu '$CPU' is not a CPU list (fix: e.g. --cpu 0 or --cpu 0-1)"
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, struct_ops registration) (fix: run it as root)"
for t in clang bpftool ip tc python3 taskset; do
  command -v $t >/dev/null || die "$t not found (fix: apt-get install clang bpftool iproute2 python3 util-linux)"
done
NAME=ssbug_reno
bpftool struct_ops list | grep -qw "$NAME" && die "$NAME is already registered (another run, or lingering sockets of one: wait a minute, or bpftool struct_ops unregister name $NAME)"

A=ssbugA$$ B=ssbugB$$ DIR=$(mktemp -d /tmp/ssbug.XXXXXX) OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
SRV="" CLI=""
cleanup() {
  trap - EXIT INT TERM
  [ -n "$CLI" ] && kill "$CLI" 2>/dev/null || true
  [ -n "$SRV" ] && kill "$SRV" 2>/dev/null || true
  wait 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  bpftool struct_ops unregister name "$NAME" >/dev/null 2>&1 || true
  [ "$STATS" = 1 ] && sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS" || true
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. build against the running kernel's BTF and register
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$DIR/vmlinux.h"
clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -DSSBUG_REPAIR=$REPAIR -Wall -Werror -I "$DIR" \
  -c "$HERE/ssbug.bpf.c" -o "$DIR/ssbug.bpf.o"
bpftool struct_ops register "$DIR/ssbug.bpf.o" >/dev/null 2>&1 || die "bpftool struct_ops register failed for ssbug.bpf.o (fix: check dmesg and bpftool -d struct_ops register)"
[ "$STATS" = 1 ] && sysctl -qw kernel.bpf_stats_enabled=1

# 2. two namespaces, one veth pair, a 20 Mbit/s tbf with a 30 kB queue at the sender
ip netns add "$A"; ip netns add "$B"
ip link add ssa0 netns "$A" type veth peer name ssb0 netns "$B"
ip -n "$A" addr add 10.99.0.1/24 dev ssa0; ip -n "$B" addr add 10.99.0.2/24 dev ssb0
ip -n "$A" link set ssa0 up; ip -n "$B" link set ssb0 up
ip netns exec "$A" tc qdisc add dev ssa0 root tbf rate 20mbit burst 10kb limit 30000
PIN=(); [ -n "$CPU" ] && PIN=(taskset -c "$CPU")

# 3. receiver in B, CONNS senders in A (one process, one thread each), congestion control ssbug_reno
"${PIN[@]}" ip netns exec "$B" python3 -c '
import socket, threading
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("10.99.0.2", 5999)); ls.listen(1024)
def serve(c):
    b = bytearray(1 << 16)
    while c.recv_into(b): pass
while True:
    c, _ = ls.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
' & SRV=$!
for _ in $(seq 50); do ip netns exec "$B" ss -ltnH 'sport = :5999' | grep -q . && break; sleep 0.1; done
START=$(date -u +%FT%TZ) LOAD=$(cut -d' ' -f1 /proc/loadavg)
"${PIN[@]}" ip netns exec "$A" python3 -c '
import socket, sys, threading, time
n, t = int(sys.argv[1]), float(sys.argv[2]); buf = b"x" * 65536
def run():
    s = socket.socket(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"ssbug_reno")
    s.settimeout(t + 5)
    try:
        s.connect(("10.99.0.2", 5999)); end = time.time() + t
        while time.time() < end: s.send(buf)
    except OSError:
        pass
    s.close()
th = [threading.Thread(target=run) for _ in range(n)]
[x.start() for x in th]; [x.join() for x in th]
' "$CONNS" "$SECS" & CLI=$!
wait "$CLI" || true
sleep 0.5

# 4. the counters
python3 - "$CONNS" "$SECS" "$CPU" "$START" "$LOAD" "$CLI" "$SRV" "$STATS" "$JSON" <<'EOF'
import json, subprocess, sys
conns, secs, cpu, start, load, cli, srv, stats, out = sys.argv[1:]
bt = lambda *a: json.loads(subprocess.run(["bpftool", "-j", *a], check=True, capture_output=True, text=True).stdout)
progs = {p["name"]: p for p in bt("prog", "show") if p.get("name", "").startswith("ssbug_")}
ids = set(progs["ssbug_ssthresh"].get("map_ids", []))
maps = {m["name"]: m["id"] for m in bt("map", "show") if m["id"] in ids}
bss = next(v for k, v in maps.items() if k.endswith(".bss"))
def ints(x, acc):
    """the {name: int} leaves of bpftool's BTF-formatted dump of a global-data map"""
    if isinstance(x, dict):
        for k, v in x.items():
            if isinstance(v, int) and not isinstance(v, bool):
                acc[k] = v
            else:
                ints(v, acc)
    elif isinstance(x, list):
        for v in x:
            ints(v, acc)
    return acc
num = lambda b: int.from_bytes(bytes(int(h, 16) for h in b), "little") if isinstance(b, list) else int(b)
g = ints([e.get("formatted", e) for e in bt("map", "dump", "id", str(bss))], {})
ctx = {num(e.get("formatted", e)["key"]): num(e.get("formatted", e)["value"])
       for e in bt("map", "dump", "id", str(maps["ctx_tgid"]))}
own = {int(cli), int(srv)}
# the python processes run under "ip netns exec" (exec'ed, same pid); taskset also execs
r = {"start_utc": start, "load": float(load), "conns": int(conns), "secs": int(secs), "cpu": cpu or "any",
     **{k: g.get(k, 0) for k in ("ss_calls", "undo_calls", "cb_runs", "bad_seen", "bad_used",
                                 "bad_value", "bad_cwnd_max", "bad_state")},
     "ctx_own": sum(n for t, n in ctx.items() if t in own), "ctx_idle": ctx.get(0, 0),
     "ctx_tgid1": ctx.get(1, 0), "ctx_other": sum(n for t, n in ctx.items() if t not in own and t > 1),
     "ctx_other_tasks": sum(1 for t in ctx if t not in own and t > 1)}
p = progs["ssbug_ssthresh"]
if stats == "1":
    r["ssthresh_run_cnt"] = p.get("run_cnt", 0)
r["ssthresh_recursion_misses"] = p.get("recursion_misses", 0)
print(f"ssbug_reno, {conns} connections x {secs} s, cpu {r['cpu']}, start {start}, load {load}")
print(f"  ssthresh() ran {r['ss_calls']} times" + (f" (bpf_stats run_cnt {r['ssthresh_run_cnt']})" if stats == "1" else "")
      + f", recursion_misses {r['ssthresh_recursion_misses']}; undo_cwnd() ran {r['undo_calls']} times")
print(f"  snd_ssthresh > 0x7fffffff found: {r['bad_seen']} (last 0x{r['bad_value']:08x}, ca_state {r['bad_state']}),"
      f" {r['bad_used']} already multiplied into a window > 10^6 (largest {r['bad_cwnd_max']})")
print(f"  callbacks: {r['cb_runs']}; in the sender/receiver processes {r['ctx_own']}, idle CPU (tgid 0) {r['ctx_idle']},"
      f" other tasks {r['ctx_other']} ({r['ctx_other_tasks']} tasks), tgid 1 {r['ctx_tgid1']}")
if out:
    with open(out, "a") as f:
        f.write(json.dumps(r) + "\n")
EOF
