#!/usr/bin/env bash
# The no-Python path of docs/kernel.md, run for real (root): register a shipped CO-RE object with
# bpftool alone, make it the default congestion control of a network namespace with sysctl, and
# let an unmodified application (python3 -m http.server / curl under `mptcpize run`) use it over
# two paths. Prints the subflows' congestion control from `ss -ti`; removes everything it made.
#   bench/kernel/notes/bpftool_only.sh [ALGO]    (default balia: the package's prebuilt ALGO.bpf.o, mpcc_ALGO)
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
HERE=$(cd "$(dirname "$0")" && pwd)
ALGO=${1:-balia}
OBJ=$HERE/../../../python/mpcc/kernel/objects/$ALGO.bpf.o
NAME=mpcc_$ALGO
for t in bpftool mptcpize curl; do
  command -v $t >/dev/null || { echo "bpftool_only: $t not found (fix: apt-get install bpftool mptcpize curl)" >&2; exit 2; }
done
A=mpcc-bo$$-cli B=mpcc-bo$$-srv DIR=$(mktemp -d)
if bpftool struct_ops list | grep -qw "$NAME"; then
  echo "bpftool_only: $NAME is already registered (by another process): not touching it" >&2; exit 2
fi
cleanup() {
  [ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true; ip netns del "$B" 2>/dev/null || true
  bpftool struct_ops unregister name "$NAME" >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap cleanup EXIT

# 1. register (what `mpcc kernel load balia` does, minus the bookkeeping)
bpftool struct_ops register "$OBJ"
bpftool struct_ops list | grep -w "$NAME"
# a namespace other than the initial one may only default to an *allowed* congestion control
# (EPERM otherwise — and Linux 6.18 then leaks a reference to the struct_ops, see docs/kernel.md)
sysctl -w net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_allowed_congestion_control) $NAME"

# 2. two namespaces joined by two veth pairs; the server announces its second address
ip netns add "$A"; ip netns add "$B"
for i in 1 2; do
  ip link add p${i}c netns "$A" type veth peer name p${i}s netns "$B"
  ip -n "$A" addr add 198.18.$i.1/24 dev p${i}c; ip -n "$A" link set p${i}c up
  ip -n "$B" addr add 198.18.$i.2/24 dev p${i}s; ip -n "$B" link set p${i}s up
done
for n in "$A" "$B"; do ip -n "$n" link set lo up; ip -n "$n" mptcp limits set subflows 4 add_addr_accepted 4; done
ip -n "$B" mptcp endpoint add 198.18.2.2 dev p2s signal

# 3. the default congestion control of the sending namespace: no change to the application
ip netns exec "$B" sysctl -w net.ipv4.tcp_congestion_control=$NAME
head -c 300M /dev/zero > "$DIR/blob"
(cd "$DIR" && exec ip netns exec "$B" mptcpize run python3 -m http.server 8000 --bind 0.0.0.0 >/dev/null 2>&1) &
SRV=$!
sleep 1.5
ip netns exec "$A" mptcpize run curl -s -o /dev/null --limit-rate 200M http://198.18.1.2:8000/blob &
CURL=$!
sleep 1
echo "--- ss -ti in the server namespace (sender side), mid-transfer:"
ip netns exec "$B" ss -tinH state established '( sport = :8000 )' | \
  awk '/^[0-9]/ {peer=$4} /^[ \t]/ { for (i = 1; i <= NF; i++) if ($i ~ /^mpcc_|^cubic|^reno/) print "subflow to", peer, "congestion control", $i }'
wait "$CURL"
echo "--- curl done"
