"""Small namespace labs for the kernel lab (root), on the testbed's namespace runs
(:class:`mpcc.testbed.netns.Run`): namespaces are named mpcc-bk<pid>-<role>, recorded with their
owner, removed on exit (also on Ctrl-C), and those of a dead process are removed on the next run.

* ``TwoPaths``: client and server joined by two unshaped veth pairs (198.18.1.0/24,
  198.18.2.0/24); the server announces its second address, so an MPTCP connection has one
  subflow per path.
* ``ThreePaths`` / ``ThreePathsBridged`` (churn.py): client and server joined by three rate-limited
  paths (198.18.{1,2,3}.0/24), the rate limit (tbf) on the client's interface or in a middle
  namespace; the server signals paths 2 and 3.
* ``SharedBottleneck``: client → router → server; the router's egress to the server is a
  kernel tbf (rate, buffer); the client has two addresses, so an MPTCP connection opens two
  subflows that share the bottleneck with whatever else is sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from mpcc.testbed import netns

# ip, tc, bpftool live in /usr/sbin on Debian, which is not on every PATH
os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def sh(*cmd, check=True) -> str:
    p = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p.stdout


@contextlib.contextmanager
def bpf_stats():
    """kernel.bpf_stats_enabled = 1 for the block (programs count run_cnt / run_time_ns), set back
    to its old value on every exit path."""
    path = Path("/proc/sys/kernel/bpf_stats_enabled")
    old = path.read_text().strip()
    path.write_text("1\n")
    try:
        yield
    finally:
        path.write_text(old + "\n")


def remove_stale() -> list[str]:
    """The namespaces (and stale struct_ops) of dead runs, from the testbed's ownership records
    (:func:`mpcc.testbed.netns.cleanup_stale`), and unrecorded ``mpcc-bk<pid>-`` ones of a dead
    process."""
    removed = netns.cleanup_stale()
    for name in sh("ip", "netns", "list").split():
        m = re.match(r"mpcc-bk(\d+)-", name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            sh("ip", "netns", "del", name, check=False)
            removed.append(name)
    return removed


def start_as_root(tool: str) -> bool:
    """A line-rate bench's start: False (after one line on stderr) without root; else SIGTERM
    exits through the labs' clean-up and stale namespaces of dead runs are removed."""
    if os.geteuid() != 0:
        print(f"{tool}: needs root (BPF, network namespaces): run with sudo", file=sys.stderr)
        return False
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    remove_stale()
    return True


def parse_arms(text: str) -> list[str]:
    """--arms: comma-separated, or semicolon-separated when an arm has parameters (``ewtcp(a=1,…)``)."""
    return [x.strip() for x in text.split(";" if "(" in text else ",") if x.strip()]


class Lab:
    roles: tuple[str, ...] = ()

    def __init__(self):
        # the testbed's namespace run: its owner record (/run/mpcc/bk<pid>/owner.json) lets any later
        # run remove what a killed one left; names are mpcc-bk<pid>-<role>
        self.run = netns.Run(runid=f"bk{os.getpid()}")
        self.tag = f"{netns.PREFIX}{self.run.runid}"
        self.ns = {r: self.run.ns(r) for r in self.roles}

    def __enter__(self):
        remove_stale()
        try:
            self.run.open()
            for r, n in self.ns.items():
                self.run.add_netns(r)
                self.ip(n, "link", "set", "lo", "up")
            self.build()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        self.run.close()       # kills what still runs inside, deletes the namespaces and the record

    def ip(self, ns, *args):
        return sh("ip", "-n", ns, *args)

    def ex(self, ns, *args, check=True):
        return sh("ip", "netns", "exec", ns, *args, check=check)

    def veth(self, a, an, b, bn):
        sh("ip", "link", "add", an, "netns", self.ns[a], "type", "veth", "peer", "name", bn, "netns", self.ns[b])
        self.ip(self.ns[a], "link", "set", an, "up")
        self.ip(self.ns[b], "link", "set", bn, "up")

    # TCP states that hold a congestion control (not LISTEN, TIME-WAIT; ss -K refuses a listener)
    CONNECTED = ("established", "syn-sent", "syn-recv", "fin-wait-1", "fin-wait-2", "close-wait", "last-ack",
                 "closing")

    def _ss(self, role, *opts) -> str:
        states = [w for st in self.CONNECTED for w in ("state", st)]
        return self.ex(self.ns[role], "ss", *opts, "-tanH", *states, check=False)

    def open_sockets(self, role) -> dict[str, int]:
        """Connected TCP sockets (subflows included) of a namespace, by state."""
        out = {}
        for ln in self._ss(role).splitlines():
            if ln.split():
                out[ln.split()[0]] = out.get(ln.split()[0], 0) + 1
        return out

    def close_sockets(self, roles, wait_s: float) -> dict:
        """After the traffic: wait up to wait_s for the namespaces' TCP sockets to finish closing,
        then abort what is left (``ss -K``, SOCK_DESTROY; the process that owned them has exited):
        a subflow whose RTO has grown to tens of seconds would otherwise hold its congestion control
        (and a BPF struct_ops) for minutes after the namespace is deleted. Returns what was left
        (by state) and how long the wait took."""
        t0, left = time.monotonic(), {}
        while time.monotonic() - t0 < wait_s:
            left = {r: self.open_sockets(r) for r in roles}
            if not any(left.values()):
                break
            time.sleep(0.5)
        for r in roles:
            if left.get(r):
                self._ss(r, "-K")
        return {"waited_s": round(time.monotonic() - t0, 1), "aborted": {r: v for r, v in left.items() if v},
                "left_after_abort": {r: v for r in roles if (v := self.open_sockets(r))}}

    def tcp_counter(self, role, name="InSegs") -> int:
        """A Tcp SNMP counter of a namespace (per-netns); InSegs on a pure sender = ACKs received."""
        lines = [ln.split() for ln in self.ex(self.ns[role], "cat", "/proc/net/snmp").splitlines()
                 if ln.startswith("Tcp:")]
        return int(lines[1][lines[0].index(name)])

    def transfer(self, host: str, secs: float, flows: list[tuple[int, str, str]],
                 pin: tuple[int, int] | None = None) -> dict:
        """Send for ``secs`` on each (port, "mptcp"|"tcp", congestion control) flow.
        Returns received bytes per port, the sender's ss rows, ACKs received and CPU time.
        ``pin`` = (sender CPU, receiver CPU): run the two processes under taskset."""
        cpu_c = ["taskset", "-c", str(pin[0])] if pin else []
        cpu_s = ["taskset", "-c", str(pin[1])] if pin else []
        srv = subprocess.Popen(["ip", "netns", "exec", self.ns["srv"], *cpu_s, sys.executable, "-m", "mpcc.lab.peer", "srv",
                                *[f"{p}:{proto}" for p, proto, _ in flows]], stdout=subprocess.PIPE, text=True)
        try:
            if srv.stdout.readline().strip() != "ready":
                raise RuntimeError("server did not start")
            rtx0 = self.tcp_counter("cli", "RetransSegs")
            acks0, cpu0, t0 = self.tcp_counter("cli"), cpu_busy_s(), time.monotonic()
            out = self.ex(self.ns["cli"], *cpu_c, sys.executable, "-m", "mpcc.lab.peer", "cli", host, str(secs),
                          *[f"{p}:{proto}:{ca}" for p, proto, ca in flows])
            cpu1, t1, acks1 = cpu_busy_s(), time.monotonic(), self.tcp_counter("cli")
            rtx1 = self.tcp_counter("cli", "RetransSegs")
            received = {int(k): v for k, v in json.loads(srv.stdout.readline()).items()}
            srv.wait(10)
        finally:
            if srv.poll() is None:
                srv.kill()
        cli = json.loads(out)
        return {"received": received, "sent": {int(k): v for k, v in cli["sent"].items()},
                "ss": parse_ss(cli["ss"]), "ss_text": cli["ss"], "acks": acks1 - acks0, "retrans": rtx1 - rtx0,
                "cpu_s": cpu1 - cpu0, "wall_s": t1 - t0}


class TwoPaths(Lab):
    roles = ("cli", "srv")
    server = "198.18.1.2"

    def __init__(self, offload=True, rate_mbit: float | None = None, buffer_pkts: int = 100):
        super().__init__()
        self.offload = offload
        self.rate_mbit, self.buffer_pkts = rate_mbit, buffer_pkts

    def build(self):
        c, s = self.ns["cli"], self.ns["srv"]
        for i in (1, 2):
            self.veth("cli", f"p{i}c", "srv", f"p{i}s")
            self.ip(c, "addr", "add", f"198.18.{i}.1/24", "dev", f"p{i}c")
            self.ip(s, "addr", "add", f"198.18.{i}.2/24", "dev", f"p{i}s")
            if not self.offload:      # one ACK per one or two MTU-sized segments
                for n, dev in ((c, f"p{i}c"), (s, f"p{i}s")):
                    self.ex(n, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", check=False)
            if self.rate_mbit:        # a tbf bottleneck per path below what the CPUs can carry
                self.ex(c, "tc", "qdisc", "add", "dev", f"p{i}c", "root", "tbf", "rate", f"{self.rate_mbit}mbit",
                        "burst", "15000", "limit", str(1500 * self.buffer_pkts))
        for n in (c, s):
            self.ip(n, "mptcp", "limits", "set", "subflows", "4", "add_addr_accepted", "4")
            self.ex(n, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno")
        self.ip(s, "mptcp", "endpoint", "add", "198.18.2.2", "dev", "p2s", "signal")


class SharedBottleneck(Lab):
    roles = ("cli", "rtr", "srv")
    server = "198.18.3.2"

    def __init__(self, rate_mbit=100, buffer_pkts=100):
        super().__init__()
        self.rate_mbit, self.buffer_pkts = rate_mbit, buffer_pkts

    def build(self):
        c, r, s = self.ns["cli"], self.ns["rtr"], self.ns["srv"]
        self.veth("cli", "cr", "rtr", "rc")
        self.veth("rtr", "rs", "srv", "sr")
        self.ip(c, "addr", "add", "198.18.1.1/24", "dev", "cr")
        self.ip(c, "addr", "add", "198.18.1.3/24", "dev", "cr")
        self.ip(r, "addr", "add", "198.18.1.2/24", "dev", "rc")
        self.ip(r, "addr", "add", "198.18.3.1/24", "dev", "rs")
        self.ip(s, "addr", "add", "198.18.3.2/24", "dev", "sr")
        for n, dev in ((c, "cr"), (r, "rc"), (r, "rs"), (s, "sr")):   # queues see packets
            self.ex(n, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off",
                    check=False)
        self.ip(c, "route", "add", "default", "via", "198.18.1.2")
        self.ip(s, "route", "add", "default", "via", "198.18.3.1")
        self.ex(r, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        self.ex(r, "tc", "qdisc", "add", "dev", "rs", "root", "tbf", "rate", f"{self.rate_mbit}mbit",
                "burst", "3000", "limit", str(1500 * self.buffer_pkts))
        for n in (c, s):
            self.ip(n, "mptcp", "limits", "set", "subflows", "4", "add_addr_accepted", "4")
            self.ex(n, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno")
        self.ip(c, "mptcp", "endpoint", "add", "198.18.1.3", "dev", "cr", "subflow")


class ThreePaths(Lab):
    roles = ("cli", "srv")
    server = "198.18.1.2"

    def __init__(self, rate_mbit: float, rmem: str | None = None, queue_bytes: int = 150000,
                 sysctls: tuple[str, ...] = ()):
        super().__init__()
        self.rate_mbit, self.rmem, self.queue_bytes, self.sysctls = rate_mbit, rmem, queue_bytes, sysctls

    def build(self):
        c, s = self.ns["cli"], self.ns["srv"]
        for i in (1, 2, 3):
            self.path(i)
            self.ip(c, "addr", "add", f"198.18.{i}.1/24", "dev", f"p{i}c")
            self.ip(s, "addr", "add", f"198.18.{i}.2/24", "dev", f"p{i}s")
        for n in (c, s):
            self.ip(n, "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "8")
            if self.rmem:             # receive buffer (min default max, bytes) of every socket
                self.ex(n, "sysctl", "-q", "-w", f"net.ipv4.tcp_rmem={self.rmem}")
            for kv in self.sysctls:   # KEY=VALUE, e.g. net.ipv4.tcp_timestamps=0 (a diagnosis)
                self.ex(n, "sysctl", "-q", "-w", kv)
        for i in (2, 3):
            self.endpoint(True, i)

    def path(self, i: int):
        """Path i: a veth pair from the client's p{i}c to the server's p{i}s, rate-limited on
        the client's interface."""
        self.veth("cli", f"p{i}c", "srv", f"p{i}s")
        self.tbf(self.ns["cli"], f"p{i}c")

    def tbf(self, ns: str, dev: str):
        self.ex(ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{self.rate_mbit}mbit",
                "burst", "15000", "limit", str(self.queue_bytes))

    def endpoint(self, add: bool, i: int) -> bool:
        """Add (signal) or remove the server's endpoint of path i. False if the kernel refused it
        (the refusal's text is kept in self.refusals). The kernel picks the id on each add."""
        s, addr = self.ns["srv"], f"198.18.{i}.2"
        if add:
            cmd = ["mptcp", "endpoint", "add", addr, "dev", f"p{i}s", "signal"]
        else:
            shown = subprocess.run(["ip", "-n", s, "mptcp", "endpoint", "show"], capture_output=True, text=True).stdout
            m = re.search(rf"^{re.escape(addr)} id (\d+)", shown, re.M)
            if m:
                cmd = ["mptcp", "endpoint", "del", "id", m.group(1)]
            elif i == 1:              # the initial subflow's address, not an endpoint: REMOVE_ADDR id 0
                cmd = ["mptcp", "endpoint", "del", "id", "0", addr]
            else:
                return False
        p = subprocess.run(["ip", "-n", s, *cmd], capture_output=True, text=True)
        if p.returncode != 0:
            self.refusals = getattr(self, "refusals", []) + [p.stderr.strip()]
        return p.returncode == 0

    def link(self, up: bool, i: int):
        self.ip(self.ns["cli"], "link", "set", f"p{i}c", "up" if up else "down")


class ThreePathsBridged(ThreePaths):
    """The same three paths, but each rate limit sits in a middle namespace (a bridge per path,
    tbf on its egress toward the server) instead of on the client's own interface: a full queue
    then drops packets in the network, which TCP sees as losses, not as a local transmit failure
    (NET_XMIT_DROP), which leaves the segment unsent and, with nothing in flight, waits for the
    probe timer. Addresses, endpoints and link flaps (the client's interface) as
    ThreePaths."""
    roles = ("cli", "mid", "srv")

    def path(self, i: int):
        m = self.ns["mid"]
        self.veth("cli", f"p{i}c", "mid", f"m{i}c")
        self.veth("mid", f"m{i}s", "srv", f"p{i}s")
        self.ip(m, "link", "add", f"b{i}", "type", "bridge")
        for dev in (f"m{i}c", f"m{i}s"):
            self.ip(m, "link", "set", dev, "master", f"b{i}")
        self.ip(m, "link", "set", f"b{i}", "up")
        self.tbf(m, f"m{i}s")


# --- tracefs ------------------------------------------------------------------------------------
TRACEFS = "/sys/kernel/tracing"


@contextlib.contextmanager
def tracefs(events: str = "tcp"):
    """The kernel's tracepoints for bpftrace or perf: tracefs mounted at /sys/kernel/tracing while the
    block runs if ``events/<events>`` is not there (a fresh Debian boot mounts none), and unmounted
    after it, also on an exception; a tracefs that was mounted before is left as it was. Raises
    RuntimeError (one line: the mount's error) when it cannot be mounted."""
    want = Path(TRACEFS, "events", events)
    mounted = False
    if not want.is_dir():
        p = subprocess.run(["mount", "-t", "tracefs", "tracefs", TRACEFS], capture_output=True, text=True)
        if p.returncode != 0 or not want.is_dir():
            if p.returncode == 0:
                subprocess.run(["umount", TRACEFS], capture_output=True)
            raise RuntimeError(f"needs tracefs at {TRACEFS} with events/{events}: "
                               f"{p.stderr.strip() or 'mounted, but the kernel has no such events'}")
        mounted = True
    try:
        yield want.parent
    finally:
        if mounted:
            subprocess.run(["umount", TRACEFS], capture_output=True)


# --- the kernel log ------------------------------------------------------------------------------
WARN_RE = re.compile(r"WARNING:|BUG:|Oops|general protection|rcu_sched detected|rcu: INFO|"
                     r"possible circular locking|refcount_t:|list_add corruption|list_del corruption")
TAINT_WARN = 1 << 9
REPORT_LINES = 80           # a warning's dump kept: registers and call trace follow the WARNING line
_RAX_RE = re.compile(r"\bRAX: ([0-9a-f]{16})\b")


def host_defect(report: list[str]) -> str | None:
    """The name of the host kernel defect a warning's report shows, or None (then the warning counts).

    A kernel that skips a struct_ops program (here a platform patch of
    __bpf_prog_enter, not mainline) returns the trampoline's unwritten return slot to the caller.
    tcp_undo_cwnd_reduction() passes undo_cwnd()'s return to tcp_snd_cwnd_set(), which WARNs on a
    value negative as an int, with the return still in RAX. Our undo_cwnd returns a 32-bit window
    (zero-extended: RAX < 2^32, and never above 0x7fffffff, mpcc_reno_undo_cwnd); a kernel text
    address there (0xffffffff80000000-0xffffffffbfffffff: the stale return address of an earlier
    call, 0xffffffff81104110 on the testbed host) is a value no program of ours returned."""
    if not report or "tcp_undo_cwnd_reduction" not in report[0]:
        return None
    for line in report[1:]:
        m = _RAX_RE.search(line)
        if m:
            rax = int(m.group(1), 16)
            if 0xffffffff80000000 <= rax <= 0xffffffffbfffffff:
                return (f"undo_cwnd returned the kernel address {rax:#x} (a skipped struct_ops program's "
                        "unwritten return slot; not a value of ours)")
            return None
    return None


def taint() -> int:
    return int(Path("/proc/sys/kernel/tainted").read_text())


class KernelLog:
    """Every kernel-log record written while it runs, read from /dev/kmsg as they come (a thread),
    not by diffing `dmesg`: the ring buffer is small (here it holds ~20 minutes of the bridge's port
    messages), so a run's records scroll out and a line count taken at the start no longer locates
    them — the old check then compared nothing. Records lost before they were read (the reader fell
    behind the ring) are counted (`lost`), never silently skipped. A `WARN_ON_ONCE()` that fired earlier
    in this boot cannot fire again: `taint_warn_before` says whether the kernel was already tainted
    by a warning (then a repeat of such a warning is invisible to any log check)."""

    def __init__(self):
        import threading
        self.reports: list[list[str]] = []     # per warning: its line and the records that follow
        self.records = 0
        self.lost = 0
        self.taint_before = taint()
        self._fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self._fd, 0, os.SEEK_END)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        import select
        seq = None
        while True:
            try:
                rec = os.read(self._fd, 8192)
            except BlockingIOError:
                if self._stop.is_set():
                    return
                select.select([self._fd], [], [], 0.2)
                continue
            except BrokenPipeError:        # overwritten before we read it: the next read resyncs
                self.lost += 1
                continue
            head, _, msg = rec.decode("utf-8", "replace").partition(";")
            fields = head.split(",")
            n = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
            if seq is not None and n is not None and n > seq + 1:
                self.lost += n - seq - 1
            seq = n if n is not None else seq
            self.records += 1
            line = msg.split("\n", 1)[0]
            if WARN_RE.search(line):
                self.reports.append([line])
            elif self.reports and len(self.reports[-1]) < REPORT_LINES and "---[ end trace" not in self.reports[-1][-1]:
                self.reports[-1].append(line)

    def stop(self) -> dict:
        """Stop reading (after draining what is there); the summary for a result file."""
        self._stop.set()
        self._thread.join(10)
        os.close(self._fd)
        after = taint()
        defects = [(r[0], host_defect(r)) for r in self.reports]
        return {"records": self.records, "lost": self.lost,
                "warnings": [w for w, d in defects if d is None][:20],
                # warnings whose own dump shows the host kernel's defect, not our programs (host_defect)
                "host_defect_warnings": [f"{w} [{d}]" for w, d in defects if d][:20],
                "reports": [r[:REPORT_LINES] for r in self.reports[:5]],
                "taint_before": self.taint_before, "taint_after": after,
                "new_taint": after & ~self.taint_before,
                "taint_warn_before": bool(self.taint_before & TAINT_WARN)}


def kernel_log_warnings(log: dict) -> list[str]:
    """A result's warning list from KernelLog.stop()'s summary: the warning records, and a line for
    what the check could not see (records lost unread, a new taint bit). A warning whose own dump
    shows the host kernel's defect (host_defect) is listed apart, in log["host_defect_warnings"],
    and so is the warning taint it sets when nothing else can have set it."""
    warnings = list(log["warnings"])
    explained = bool(log.get("host_defect_warnings")) and not warnings and log["new_taint"] == TAINT_WARN
    if log["lost"] or (log["new_taint"] and not explained):
        warnings.append(f"kernel log: {log['lost']} records lost unread, new taint {log['new_taint']:#x}")
    return warnings


def host_role(sink, send) -> bool:
    """When this script was started as a host process inside a namespace (``SCRIPT sink PORT N
    SECS [BIND]`` or ``SCRIPT send HOST PORT N SECS CA``), run that role and return True."""
    if len(sys.argv) < 2 or sys.argv[1] not in ("sink", "send"):
        return False
    if sys.argv[1] == "sink":
        sink(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), *sys.argv[5:6])
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
    return True


def cpu_busy_s() -> float:
    """CPU seconds spent not idle, all CPUs (from /proc/stat)."""
    f = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    v = [int(x) for x in f]
    busy = sum(v) - v[3] - v[4]          # minus idle, iowait
    return busy / os.sysconf("SC_CLK_TCK")


def parse_ss(text: str) -> list[dict]:
    """Rows of `ss -tinH`: a socket line, then indented info lines (one or several, depending on
    the kernel and ss versions). ``ca`` is the info token naming a registered congestion control."""
    known = set(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())
    rows, lines = [], text.splitlines()
    for i, ln in enumerate(lines):
        if not ln.strip() or ln[0].isspace():
            continue
        info = []
        for nxt in lines[i + 1:]:
            if not nxt.strip() or not nxt[0].isspace():
                break
            info += nxt.split()
        kv = {f.split(":", 1)[0]: f.split(":", 1)[1] for f in info if ":" in f}
        parts = ln.split()
        ca = next((f for f in info if f in known), info[0] if info else "")
        rows.append({"local": parts[2], "peer": parts[3], "ca": ca,
                     "cwnd": int(kv.get("cwnd", 0)), "ssthresh": int(kv.get("ssthresh", 0) or 0),
                     "bytes_acked": int(kv.get("bytes_acked", 0))})
    return rows
