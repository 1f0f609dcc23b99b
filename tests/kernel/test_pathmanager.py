"""The re-joining path manager (mpcc.pm; root): in a two-namespace lab with three
paths, a path whose link is down when the connection opens is never joined by upstream's in-kernel
path manager, and is joined by ``mpcc kernel pm`` once the link comes up. Also: it sets pm_type
back on exit, joins from each ``--source``, and does all of it over IPv6.

The scenario deliberately removes no address while data is queued: on 6.18.44 a REMOVE_ADDR that
closed the initial subflow of a connection under this path manager hit a kernel divide error once
(bench/kernel/notes/KERNEL_BUG_PUSH_PENDING.md), which hangs the host's MPTCP netlink; the storm soak with
this path manager is a bench run (python/mpcc/lab/churn.py --pm rejoin, CHURN.md §14), not CI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
from mpcc.lab import netlab

pytestmark = [pytest.mark.kernel,
              pytest.mark.skipif(os.geteuid() != 0 or not Path("/proc/sys/net/mptcp/pm_type").exists(),
                                 reason="needs root and a kernel with the user-space MPTCP path manager")]
CHURN = ["-m", "mpcc.lab.churn"]
PORT = 5402


def _pm(lab, log: Path, *args) -> subprocess.Popen:
    p = subprocess.Popen(["ip", "netns", "exec", lab.ns["cli"], sys.executable, "-m", "mpcc.pm",
                          "--ready", "--log", str(log), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    assert p.stdout.readline().strip() == "ready", p.stderr.read()
    return p


def _stop(p: subprocess.Popen) -> dict:
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _subflows_to(lab, daddr: str) -> int:
    out = lab.ex(lab.ns["cli"], "ss", "-tnH", "state", "established", "dst", f"[{daddr}]" if ":" in daddr else daddr,
                 check=False)
    return len([ln for ln in out.splitlines() if ln.strip()])


def _one_connection(lab, secs: float) -> tuple[subprocess.Popen, subprocess.Popen]:
    """churn.py's sink in the server's namespace (on ``lab.bind``, if the lab has one: ``::`` for
    IPv6) and one MPTCP connection (reno) from the client to ``lab.server`` for ``secs``; return
    (sink, sender)."""
    bind = [lab.bind] if hasattr(lab, "bind") else []
    sink = subprocess.Popen(["ip", "netns", "exec", lab.ns["srv"], sys.executable, *CHURN, "sink", str(PORT), "1",
                             str(secs), *bind], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert sink.stdout.readline().strip() == "ready"
    send = subprocess.Popen(["ip", "netns", "exec", lab.ns["cli"], sys.executable, *CHURN, "send", lab.server,
                             str(PORT), "1", str(secs), "reno"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    return sink, send


def _finish(sink: subprocess.Popen, send: subprocess.Popen, secs: float) -> list[str]:
    """Wait for the sender; stop the sink; return the sender's connection errors."""
    out = send.communicate(timeout=secs + 30)[0]
    sink.kill()
    sink.communicate()
    return json.loads(out.strip().splitlines()[-1])["errors"]


def _transfer_with_link_up(lab, path2: str, secs: float = 6.0, up_at: float = 1.5) -> int:
    """Path 2's link down, one connection for ``secs`` to path 1's address, the link up at
    ``up_at``; return the established subflows to path 2's address ``path2`` just before the end."""
    lab.link(False, 2)
    sink, send = _one_connection(lab, secs)
    time.sleep(up_at)
    lab.link(True, 2)
    time.sleep(secs - up_at - 1.0)
    n = _subflows_to(lab, path2)
    assert _finish(sink, send, secs) == []
    return n


def test_in_kernel_pm_never_joins_a_path_that_was_down_and_rejoin_does(tmp_path):
    """False-failure rate: deterministic (which subflows exist, read from the kernel), within generous
    time limits for the join; False-failure rate 0 on a stock kernel."""
    with netlab.ThreePaths(rate_mbit=50) as lab:
        assert _transfer_with_link_up(lab, "198.18.2.2") == 0      # upstream's in-kernel PM: never tried again
    with netlab.ThreePaths(rate_mbit=50) as lab:
        log = tmp_path / "pm.jsonl"
        pm = _pm(lab, log)
        n = _transfer_with_link_up(lab, "198.18.2.2")
        summary = _stop(pm)
    assert n == 1, f"{n} subflows to path 2's address after its link came up"
    events = [json.loads(ln) for ln in log.read_text().splitlines()]
    refused = [e for e in events if e.get("ev") == "join" and e["daddr"] == "198.18.2.2" and e["err"]]
    joined = [e for e in events if e.get("ev") == "sub_established" and e.get("daddr") == "198.18.2.2"]
    ups = [e["t"] for e in events if e.get("ev") == "link_up"]
    assert refused, "the join while the link was down should have been refused (ENETUNREACH)"
    assert joined and ups and joined[0]["t"] >= min(ups), (joined, ups)
    assert joined[0]["t"] - min(ups) < 2.0          # at once on link-up, not after the back-off
    assert summary["connections"] == 1 and summary["re_joins_established"] >= 1
    assert set(summary["refusals"]) <= {"Network is unreachable"}, summary["refusals"]


def test_pm_type_is_set_back_on_exit(tmp_path):
    """False-failure rate: deterministic (a sysctl read back). 0."""
    with netlab.ThreePaths(rate_mbit=50) as lab:
        read = lambda: lab.ex(lab.ns["cli"], "sysctl", "-n", "net.mptcp.pm_type").strip()  # noqa: E731
        assert read() == "0"
        pm = _pm(lab, tmp_path / "pm.jsonl")
        assert read() == "1"
        _stop(pm)
        assert read() == "0"


def test_source_joins_the_peer_from_every_given_address(tmp_path):
    """--source: a multi-homed client joins the server's one address from each local address (the
    initial subflow fills the slot of its own source).

    False-failure rate: deterministic (subflows read from the kernel) within generous time limits;
    False-failure rate 0 on a stock kernel."""
    with netlab.ThreePaths(rate_mbit=50) as lab:
        for i in (2, 3):
            lab.endpoint(False, i)          # the server announces nothing: a single-homed peer
        pm = _pm(lab, tmp_path / "pm.jsonl", "--source", "198.18.1.1", "--source", "198.18.2.1")
        lab.ip(lab.ns["cli"], "route", "add", "198.18.1.2/32", "dev", "p2c", "src", "198.18.2.1", "table", "100")
        lab.ip(lab.ns["cli"], "rule", "add", "from", "198.18.2.1", "table", "100")
        lab.ip(lab.ns["srv"], "route", "add", "198.18.2.1/32", "dev", "p1s")   # replies over path 1's link
        sink, send = _one_connection(lab, 4.0)
        time.sleep(2.5)
        out = lab.ex(lab.ns["cli"], "ss", "-tnH", "state", "established", "dst", "198.18.1.2", check=False)
        _finish(sink, send, 4.0)
        summary = _stop(pm)
    sources = sorted(ln.split()[2].rsplit(":", 1)[0] for ln in out.splitlines() if ln.strip())
    assert sources == ["198.18.1.1", "198.18.2.1"], out
    assert summary["established"] >= 1 and summary["refused"] == 0, summary


class _TwoPaths6(netlab.Lab):
    """Two IPv6 paths (fd00:i::1 ↔ fd00:i::2 on veth p{i}c/p{i}s, no DAD); the server announces path
    2's address. The addresses stay on a link taken down (keep_addr_on_down; IPv6's default flushes
    them, and they would not come back with the link)."""
    roles = ("cli", "srv")
    server, bind = "fd00:1::2", "::"

    def build(self):
        c, s = self.ns["cli"], self.ns["srv"]
        for n in (c, s):
            self.ex(n, "sysctl", "-qw", "net.ipv6.conf.all.keep_addr_on_down=1", "net.ipv6.conf.default.keep_addr_on_down=1")
        for i in (1, 2):
            self.veth("cli", f"p{i}c", "srv", f"p{i}s")
            self.ip(c, "-6", "addr", "add", f"fd00:{i}::1/64", "dev", f"p{i}c", "nodad")
            self.ip(s, "-6", "addr", "add", f"fd00:{i}::2/64", "dev", f"p{i}s", "nodad")
        for n in (c, s):
            self.ip(n, "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "8")
        self.ip(s, "mptcp", "endpoint", "add", "fd00:2::2", "dev", "p2s", "signal")

    def link(self, up: bool, i: int):
        self.ip(self.ns["cli"], "link", "set", f"p{i}c", "up" if up else "down")


def test_ipv6_a_path_that_was_down_is_joined_when_its_link_comes_up(tmp_path):
    """The first test over IPv6: the server's second address is announced while the client's link
    to it is down (the join is refused: no route); the path manager joins it on link-up, with IPv6
    addresses in its events and in its SUBFLOW_CREATE.

    False-failure rate: deterministic (subflows read from the kernel) within generous time limits;
    False-failure rate 0 on a stock kernel."""
    with _TwoPaths6() as lab:
        log = tmp_path / "pm.jsonl"
        pm = _pm(lab, log)
        n = _transfer_with_link_up(lab, "fd00:2::2")
        summary = _stop(pm)
    assert n == 1, f"{n} subflows to fd00:2::2 after its link came up"
    events = [json.loads(ln) for ln in log.read_text().splitlines()]
    created = [e for e in events if e.get("ev") == "created"]
    assert created and created[0]["daddr"] == "fd00:1::2", created
    joined = [e for e in events if e.get("ev") == "sub_established" and e.get("daddr") == "fd00:2::2"]
    ups = [e["t"] for e in events if e.get("ev") == "link_up"]
    assert joined and ups and 0 <= joined[0]["t"] - min(ups) < 2.0, (joined, ups)
    assert joined[0]["saddr"] == "fd00:2::1"
    assert summary["connections"] == 1 and summary["re_joins_established"] >= 1, summary
