"""The compat build's own cong_control (bpf/compat/mpcc_prr.h; bench/kernel/notes/CHURN.md §3d; root only).

The compat build's struct_ops table has cong_control (beside it the kernel does not call the
table's cong_avoid), the default build's has cong_avoid and none of the compat programs; with the
compat build a socket's window follows the kernel's reduction rules: at the end of
every CWR or (not undone) Recovery episode the window is ssthresh (tcp_end_cwnd_reduction, which
the kernel skips for a cong_control CC and our set_state redoes), never above ssthresh + 1 (one
congestion-avoidance step of the same ACK). The observation is independent of our programs: the
kernel's tcp_cong_state_set tracepoint marks the end of an episode (fired in tcp_set_ca_state(),
old state still in icsk_ca_state; a Recovery undone has undo_marker = 0 there) and the next
tcp_probe of the socket (each segment tcp_rcv_established takes, before its processing) shows the
window the ending ACK left. The kernel's own reno, through the same observation on the same path,
is the control: its tcp_end_cwnd_reduction sets the same window.

Path: 20 plain TCP connections, 6 s, through a middle namespace: the sender's interface has a
40 Mbit/s tbf with a 4-packet queue (a full queue fails the transmit: tcp_enter_cwr, CWR) and the
middle one toward the receiver a 20 Mbit/s tbf with a 30 kB queue (drops: losses, Recovery).
(This kernel has no netem or RED.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mpcc.kernel.bpf import environment_problem

from mpcc.lab import netlab
from mpcc.testbed import netns

os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
_SKIP = environment_problem()
pytestmark = [pytest.mark.kernel, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]
if _SKIP is None:
    from mpcc.kernel import bpf

PORT = 5997
SERVER = textwrap.dedent(f"""
    import socket, threading
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("10.97.2.1", {PORT})); ls.listen(256); print("ready", flush=True)
    def serve(c):
        b = bytearray(1 << 16)
        while c.recv_into(b): pass
    while True:
        c, _ = ls.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
""")
CLIENT = textwrap.dedent(f"""
    import socket, sys, threading, time
    n, t, ca = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3].encode()
    buf = b"x" * 65536
    def run():
        s = socket.socket(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ca)
        s.settimeout(t + 5)
        try:
            s.connect(("10.97.2.1", {PORT})); end = time.time() + t
            while time.time() < end: s.send(buf)
        except OSError:
            pass
        s.close()
    th = [threading.Thread(target=run) for _ in range(n)]
    [x.start() for x in th]; [x.join() for x in th]
""")
# one connection sends 4 MB, waits until all of it is acknowledged, and reports TCP_INFO: the pacing
# rate the last ACK left (packets_out was 0 then, so max(cwnd, packets_out) = cwnd)
PACING = textwrap.dedent(f"""
    import json, socket, struct, sys, time
    s = socket.socket(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[1].encode())
    s.connect(("10.97.2.1", {PORT})); s.sendall(b"x" * (4 << 20))
    for _ in range(300):
        i = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
        if struct.unpack_from("I", i, 24)[0] == 0 and struct.unpack_from("I", i, 0)[0] & 0xff00 == 0:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    i = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
    f = dict(zip(("mss", "unacked", "rtt", "ssthresh", "cwnd"),
                 [struct.unpack_from("I", i, o)[0] for o in (16, 24, 68, 76, 80)]))
    f["pacing_rate"] = struct.unpack_from("Q", i, 104)[0]
    print(json.dumps(f)); s.close()
""")
def _member_offset(obj: Path, struct: str, member: str) -> int:
    """Byte offset of ``member`` in ``struct`` as the object's BTF lays it out."""
    out = subprocess.run(["bpftool", "btf", "dump", "file", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    block = out[out.index(f"STRUCT '{struct}'"):]
    block = block[:block.index("\n[", 1)] if "\n[" in block else block
    m = re.search(rf"^\s+'{member}' type_id=\d+ bits_offset=(\d+)", block, re.M)
    assert m, f"no {struct}.{member} in {obj}'s BTF"
    return int(m.group(1)) // 8


def prev_segs_in() -> int:
    """Where tp->segs_in stands in the compat build's CA area after its cong_control
    (struct mpcc_ca.prev_segs_in of balia's compat object, in the BTF of its diagnostic build,
    whose records name the struct)."""
    return _member_offset(bpf.build("balia", build="compat-diag")[0], "mpcc_ca", "prev_segs_in")


def _watch(ours: bool) -> str:
    """END <old state> <cwnd> <ssthresh> <ran> <acked> <segs>: the window the ending ACK left, at the
    socket's next segment (segs: segments received from the ending one to the reading, 1 unless a
    probe was skipped; diagnostic, as acked); ran = 1 if our cong_control ran at that ACK (for ours: only that segment was received
    since its last run — tcp_v4_rcv counts segs_in before tcp_rcv_established fires tcp_probe),
    always 1 for the kernel's own control."""
    ran = (f"((struct tcp_sock *)args->skaddr)->segs_in - *(uint32 *)((uint8 *)((struct inet_connection_sock *)"
           f"args->skaddr)->icsk_ca_priv + {prev_segs_in()}) == 1" if ours else "1")
    return textwrap.dedent(f"""
    tracepoint:tcp:tcp_cong_state_set /args->sport == {PORT} || args->dport == {PORT}/ {{
      $icsk = (struct inet_connection_sock *)args->skaddr;
      $tp = (struct tcp_sock *)args->skaddr;
      $old = $icsk->icsk_ca_state;
      if (($old == 2 || ($old == 3 && $tp->undo_marker != 0)) && args->cong_state <= 1) {{
        @ended[args->skaddr] = $old + 1;
        @acked[args->skaddr] = $tp->delivered - @pd[args->skaddr];   /* the ending ACK's deliveries */
        @seg[args->skaddr] = $tp->segs_in;   /* the ending segment (tcp_v4_rcv counted it already) */
      }} else if (args->cong_state >= 2) {{
        delete(@ended[args->skaddr]);   /* a new episode or a loss before the next segment */
      }}
    }}
    tracepoint:tcp:tcp_probe /@ended[args->skaddr]/ {{
      /* a reduction under way again means a state change the program above did not see (on the
         6.18 testbed kernel a tracepoint program is skipped when the softirq interrupted PID 1,
         bench/kernel/notes/KERNEL_BUG.md §5.3): that window is the new episode's, not the end's */
      if (((struct inet_connection_sock *)args->skaddr)->icsk_ca_state <= 1) {{
        printf("END %d %u %u %d %u %u\\n", @ended[args->skaddr] - 1, args->snd_cwnd, args->ssthresh, {ran},
               @acked[args->skaddr], ((struct tcp_sock *)args->skaddr)->segs_in - @seg[args->skaddr]);
      }} else {{
        printf("VOID\\n");
      }}
      delete(@ended[args->skaddr]);
      delete(@acked[args->skaddr]);
      delete(@seg[args->skaddr]);
    }}
    /* delivered before each segment is processed: the ending ACK's deliveries are the difference at
       its state change (diagnostic only: a failure then says how many packets that ACK delivered) */
    tracepoint:tcp:tcp_probe /args->sport == {PORT} || args->dport == {PORT}/ {{
      @pd[args->skaddr] = ((struct tcp_sock *)args->skaddr)->delivered;
    }}
    tracepoint:tcp:tcp_probe /args->snd_cwnd > 1000000/ {{ printf("HUGE %u %u\\n", args->snd_cwnd, args->ssthresh); }}
    """)


def _sh(cmd: str) -> None:
    subprocess.run(cmd, shell=True, check=True, capture_output=True)


@pytest.fixture(scope="module")
def tracefs():
    """The kernel's tcp tracepoints for bpftrace: tracefs mounted for the module's tests if it is
    not (a fresh boot of Debian mounts none), and unmounted after them (netlab.tracefs)."""
    if not shutil.which("bpftrace"):
        pytest.skip("needs bpftrace (apt-get install bpftrace; scripts/setup-system.sh installs it)")
    try:
        with netlab.tracefs("tcp"):
            yield
    except RuntimeError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def path(tracefs):
    """Sender, middle and receiver namespaces (the project's namespace runs, mpcc.testbed.netns:
    recorded, removed on every exit); yields the sender's."""
    with netns.Run() as r:
        a, m, b = r.add_netns("cca"), r.add_netns("ccm"), r.add_netns("ccb")
        for cmd in (f"ip link add cca0 netns {a} type veth peer name ccm0 netns {m}",
                    f"ip link add ccm1 netns {m} type veth peer name ccb0 netns {b}",
                    f"ip -n {a} addr add 10.97.1.1/24 dev cca0", f"ip -n {m} addr add 10.97.1.2/24 dev ccm0",
                    f"ip -n {m} addr add 10.97.2.2/24 dev ccm1", f"ip -n {b} addr add 10.97.2.1/24 dev ccb0",
                    f"ip -n {a} link set cca0 up", f"ip -n {m} link set ccm0 up", f"ip -n {m} link set ccm1 up",
                    f"ip -n {b} link set ccb0 up", f"ip netns exec {m} sysctl -qw net.ipv4.ip_forward=1",
                    f"ip -n {a} route add default via 10.97.1.2", f"ip -n {b} route add default via 10.97.2.2",
                    # the sender's own queue: 4 packets, so bursts fail the transmit (tcp_enter_cwr: CWR)
                    f"ip netns exec {a} tc qdisc add dev cca0 root tbf rate 40mbit burst 5kb limit 6000",
                    # the bottleneck in the middle: 20 Mbit/s, 30 kB, drops seen as losses (Recovery)
                    f"ip netns exec {m} tc qdisc add dev ccm1 root tbf rate 20mbit burst 10kb limit 30000"):
            _sh(cmd)
        srv = r.spawn([sys.executable, "-c", SERVER], b, stdout=subprocess.PIPE)
        assert srv.stdout.readline().strip() == b"ready"
        yield a


def _stop(watch: subprocess.Popen, grace_s: float = 60.0) -> str:
    """Stop the watch with SIGINT and return what it printed. Every END/HUGE line was printed
    while the connections ran (0.5 s before the signal), so only bpftrace's own tear-down is
    waited for: on the 6.18 host it usually takes milliseconds, but in one fresh-clone CI run
    (2026-11-28) it had not exited 20 s after SIGINT with all its lines out. If it has not
    exited after grace_s it is killed and its printed lines are kept."""
    watch.send_signal(2)
    try:
        return watch.communicate(timeout=grace_s)[0]
    except subprocess.TimeoutExpired:
        watch.kill()
        return watch.communicate()[0]


def _episode_ends(sender: str, ca: str, ours: bool = False) -> tuple[list[tuple[int, int, int, int]], int]:
    """Run the connections with congestion control ca under the watch: [(old state, cwnd,
    ssthresh, ran)] at the end of each reduction episode, and how many windows above 10^6 were
    seen."""
    watch = subprocess.Popen(["bpftrace", "-e", _watch(ours)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)                     # bpftrace attaches
        assert watch.poll() is None, watch.stderr.read()
        subprocess.run(["ip", "netns", "exec", sender, sys.executable, "-c", CLIENT, "20", "6", ca],
                       check=True, capture_output=True, timeout=60)
        time.sleep(0.5)
    finally:
        out = _stop(watch)
    ends = [tuple(int(x) for x in line.split()[1:7]) for line in out.splitlines() if line.startswith("END ")]
    huge = sum(line.startswith("HUGE ") for line in out.splitlines())
    voided = sum(line == "VOID" for line in out.splitlines())
    assert voided <= len(ends), f"{voided} ends voided by a reduction under way at the next segment, {len(ends)} seen"
    return ends, huge


def _check_ends(ends: list[tuple[int, int, int, int, int]]) -> None:
    """Every episode end at which the control ran is at ssthresh (+1). An end at which our
    programs did not run — the testbed kernel skipped them (KERNEL_BUG.md §5; the watch saw
    more than one segment since our last cong_control, cwnd still PRR's) — cannot be judged; a
    few are allowed, not more than 5 %."""
    judged = [e for e in ends if e[3]]
    assert len(judged) >= 20, f"too few reduction episodes ended to judge: {len(judged)} of {len(ends)}"
    assert len(ends) - len(judged) <= 0.05 * len(ends), (
        f"our cong_control did not run at {len(ends) - len(judged)} of {len(ends)} episode ends")
    assert {e[0] for e in judged} == {2, 3}, "both CWR (2) and Recovery (3) episodes must end"
    wrong = [e for e in judged if not e[2] <= e[1] <= e[2] + 1]
    assert not wrong, (f"{len(wrong)} of {len(judged)} episodes did not end at ssthresh "
                       f"(state, cwnd, ssthresh, ran, packets the ending ACK delivered, segments from the end to the reading): {wrong[:5]}")


@pytest.mark.parametrize("build", ["default", "compat"])
def test_the_ops_table_of_each_build(build):
    """False-failure rate: 0: the ops table read back from the kernel (bpftool struct_ops dump)."""
    with bpf.load("balia", build=build) as reg:
        assert reg.build == build
        # by id: an unregistered map of the same name may still be alive (held by closing sockets)
        out = subprocess.run(["bpftool", "-j", "struct_ops", "dump", "id", str(reg.map_id)],
                             capture_output=True, text=True, check=True).stdout
    text = out.strip()     # `dump id` prints its JSON values comma-separated, without the brackets
    docs = json.loads(text if text.startswith("[") else f"[{text}]")
    data = next(d["bpf_struct_ops_tcp_congestion_ops"]["data"] for d in docs
                if "bpf_struct_ops_tcp_congestion_ops" in d)
    prog = {k: v.rsplit(" ", 1)[-1] for k, v in data.items() if isinstance(v, str) and "(" in v}
    compat = ("cong_control", "set_state", "cwnd_event")
    for op in ("init", "cong_avoid", "ssthresh", "undo_cwnd", *(compat if build == "compat" else ())):
        assert "prog_id:" in prog[op], (op, data[op])
    for op in ("in_ack_event", "pkts_acked", *(compat if build == "default" else ())):
        assert prog[op] == "0", (op, data[op])


def test_kernel_reno_ends_every_reduction_at_ssthresh_the_observations_control(path):
    """False-failure rate: 0 on a stock kernel: every episode end of 6 s of 20 connections through
    a 4-packet queue is judged exactly against the kernel's own rule (≥ 20 asked; 6 s of 20
    connections through these queues end far more); the watch misses an end only where the
    platform skips a tracepoint program (KERNEL_BUG.md §5.3)."""
    ends, huge = _episode_ends(path, "reno")
    _check_ends(ends)
    assert huge == 0


#: runs of our cong_control on a kernel that skips programs, until one is sound (on this host
#: 2026-11-29, 0 of 6 runs were: each further attempt costs ~13 s for little chance)
ATTEMPTS = 2
#: health counters (bpf.HEALTH_KEYS) that show a program of the run was skipped: a skipped
#: ssthresh()/undo_cwnd() (its garbage return value written into the window, KERNEL_BUG.md,
#: repaired at our next cong_control: bpf/compat/mpcc_compat.h), a skipped init, a skipped
#: cong_control (ACKs no run saw). A skipped set_state or tracepoint program leaves no counter of
#: its own; on this host, 12 runs of 2026-11-29 (02:00 UTC) had wrong ends or windows above 10^6
#: only in runs with one of these counters non-zero (5 of 9 such runs), none in the 3 without.
SKIP_EVIDENCE = ("ssthresh_repaired", "cwnd_repaired", "init_skipped", "unseen_delivery_runs")


def test_our_cong_control_ends_every_reduction_at_ssthresh_and_never_a_huge_window(path):
    """Each episode end judged (_check_ends) and no window above 10^6: every run of a stock
    kernel; on a kernel that skips programs (bpf_build.detect_build), the runs whose health
    counters show no skipped program (SKIP_EVIDENCE), re-run up to ATTEMPTS times for one, the
    others' figures counted in the message; skipped with their figures when none was sound.

    False-failure rate: 0 on a stock kernel (as the control above: every end judged exactly, none
    unjudged since no program is skipped, and no garbage window); on a kernel that skips
    programs, a sound run's tracepoint programs may still have been skipped (no counter shows
    that): up to 5 % of its ends may be unjudged (_check_ends)."""
    from mpcc.kernel import build as bpf_build
    skipping = bpf_build.detect_build()[0] == "compat"
    unsound = []
    for _ in range(ATTEMPTS if skipping else 1):
        with bpf.load("balia", build="compat-diag") as reg:     # the object prev_segs_in() reads
            ends, huge = _episode_ends(path, reg.kernel_name, ours=True)
            health = bpf.health_counters("balia") or {}
        skips = {k: health.get(k, 0) for k in SKIP_EVIDENCE if health.get(k, 0)}
        if not skipping or not skips:
            _check_ends(ends)
            assert huge == 0, (f"{huge} windows above 10^6 on a run without skipped programs (unsound runs "
                               f"not judged: {unsound})")
            return
        wrong = sum(1 for e in ends if e[3] and not e[2] <= e[1] <= e[2] + 1)
        unsound.append({"ends": len(ends), "wrong ends": wrong, "huge windows": huge, **skips})
    pytest.skip(f"no sound run of {ATTEMPTS} on this kernel, which skips struct_ops programs "
                f"({bpf_build.detect_build()[1]}): {unsound}")


def _pacing(sender: str, ca: str) -> dict:
    out = subprocess.run(["ip", "netns", "exec", sender, sys.executable, "-c", PACING, ca],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out)


def _check_pacing(sender: str, f: dict) -> None:
    """tcp_update_pacing_rate: mss · 80000 · ratio · cwnd / srtt_us, srtt_us in 1/8 µs; TCP_INFO gives
    srtt_us >> 3, so srtt_us ∈ [8·rtt, 8·rtt + 7] bounds the exact value."""
    assert f["unacked"] == 0, f
    rd = lambda k: int(subprocess.run(["ip", "netns", "exec", sender, "cat", f"/proc/sys/net/ipv4/{k}"],
                                      check=True, capture_output=True, text=True).stdout)
    ratio = rd("tcp_pacing_ss_ratio") if f["cwnd"] < f["ssthresh"] // 2 else rd("tcp_pacing_ca_ratio")
    num = f["mss"] * 80000 * ratio * f["cwnd"]
    assert num // (8 * f["rtt"] + 7) <= f["pacing_rate"] <= num // (8 * f["rtt"]), (f, ratio)


def test_pacing_rate_is_the_kernels_formula_for_reno_and_for_ours(path):
    """False-failure rate: 0: one connection's pacing rate after all its data is acknowledged,
    against the kernel's formula with srtt's rounding as the only interval (exact integers)."""
    _check_pacing(path, _pacing(path, "reno"))        # the formula's control: the kernel's own computation
    with bpf.load("balia", build="compat") as reg:
        _check_pacing(path, _pacing(path, reg.kernel_name))
