"""A testbed session (:class:`mpcc.testbed.engine.Testbed`) runs the cells of a table on one
network: the namespaces are built once and kept across runs and algorithms, every run starts
with fresh linkem counters, and nothing is left after the session — also when a run raises
mid-table (an error or Ctrl-C).

Root tests (``kernel`` marker), ~55 s in all; they assert facts of the set-up (names, counters,
what exists afterwards), not measured rates, so they have no chance failure rate beyond a flow
that never connects (retried once by the engine).
"""

from __future__ import annotations

import os
import time

import pytest

from mpcc import scenario

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="kernel testbed tests need root")

# Peng Table III in small: a multipath group over two links, Reno flows on the second
TWO_LINKS = """
name = "two-links"
duration_s = 3.0
[[links]]
name = "link1"
capacity_mbps = 20.0
delay_ms = 5.0
buffer_pkts = 30
[[links]]
name = "link2"
capacity_mbps = 20.0
delay_ms = 5.0
buffer_pkts = 30
[[groups]]
name = "mp"
count = 2
algorithm = "balia"
paths = [["link1"], ["link2"]]
[[groups]]
name = "sp"
count = 2
algorithm = "reno"
paths = [["link2"]]
"""


def _ready():
    from mpcc.testbed import topology
    if problem := topology.environment_problem():
        pytest.skip(problem)


def _algorithms() -> list[str]:
    """Two BPF algorithms when the loader works here (struct_ops loaded by the session), else
    two of the kernel's own."""
    try:
        from mpcc.kernel import bpf
        bpf.check_environment()
        return ["ewtcp", "coupled"]
    except Exception:
        return ["reno", "cubic"]


def _registered() -> set[str]:
    try:
        from mpcc.kernel import bpf
        return set(bpf.registered())
    except Exception:
        return set()


def _left(algos: list[str], before: set[str]) -> set[str]:
    """The struct_ops of ``algos`` registered now that were not before the session."""
    from mpcc.testbed import engine
    return {engine.kernel_cc(a)[0] for a in algos} & (_registered() - before)


def _names(topo) -> list[str]:
    return sorted([topo.router_ns, topo.server_ns, *topo.hosts.values(), *(lp.relay_ns for lp in topo.links.values())])


def test_the_network_key_ignores_the_traffic_and_follows_the_links():
    from dataclasses import replace

    from mpcc.testbed import engine, topology
    s = scenario.loads(TWO_LINKS)
    key = topology.network_key(s)
    other_traffic = replace(engine.scaled(s, 9.0), groups=tuple(replace(g, count=5) for g in s.groups))
    assert topology.network_key(other_traffic) == key      # counts, times: the traffic's
    slower = replace(s, links=(replace(s.links[0], capacity_mbps=10.0), s.links[1]))
    assert topology.network_key(slower) != key
    one_path = replace(s, groups=(replace(s.groups[0], paths=(("link1",),)), s.groups[1]))
    assert topology.network_key(one_path) != key


@pytest.mark.kernel
@needs_root
def test_a_session_runs_every_run_of_a_table_on_one_network(tmp_path, one_attempt_per_run):
    """False-failure rate: deterministic (names, counters, what exists afterwards); fails only if a
    flow never connects twice in a row. False-failure rate 0 on a stock kernel. One attempt per run:
    a health re-run would be one more run on the same network, and is judged elsewhere."""
    from mpcc.testbed import engine, netns
    _ready()
    s = scenario.loads(TWO_LINKS)
    algos = _algorithms()
    before = _registered()
    seen: list[list[str]] = []
    with engine.Testbed() as bed:
        for a in algos:
            st = engine.settings_from(s, runs=2, duration_s=3.0, warmup_s=1.0, algorithm=a)
            res, sms = engine.run_detailed(s, st, tmp_path / a, progress=False,
                                           on_built=lambda t: seen.append(_names(t)), bed=bed)
            assert res.groups["mp"].rate_mbps > 1.0 and res.groups["sp"].rate_mbps > 1.0, res.to_json()
            for i in range(2):   # each run's emulators started afresh: counters at 0 before its traffic
                csv = (tmp_path / a / f"run{i}" / "linkem-1.csv").read_text().splitlines()
                first = dict(zip(csv[0].split(","), csv[1].split(",")))
                assert int(first["arrivals"]) == 0 and int(first["drops_tail"]) == 0, csv[:2]
        ours = bed.namespaces
        assert bed.builds == 1
        assert len(seen) == 2 * len(algos) and all(x == seen[0] for x in seen), seen
        assert sorted(ours) == seen[0] and set(ours) <= set(netns.list_netns())
    assert not set(ours) & set(netns.list_netns())
    assert not _left(algos, before)


def _open_sockets(namespaces: list[str]) -> list[str]:
    """Every TCP socket (MPTCP subflows included) in ``namespaces`` that is neither listening nor
    in TIME-WAIT, as ``ss`` prints it."""
    import subprocess
    out = []
    for ns in namespaces:
        text = subprocess.run(["ip", "netns", "exec", ns, "ss", "-tanH"], capture_output=True, text=True,
                              check=True).stdout
        out += [f"{ns}: {line}" for line in text.splitlines()
                if line.split() and line.split()[0] not in ("LISTEN", "TIME-WAIT")]
    return out


@pytest.mark.kernel
@needs_root
def test_a_run_leaves_no_connection_draining_into_the_next(tmp_path, one_attempt_per_run):
    """Every flow's send buffer is full when its group stops (a bulk writer), so a plain close()
    would leave an orphan draining it, which the next run's emulator would forward. The flows
    abort instead: once a run has ended, no connection of it is open in any namespace of the
    network, which the next run reuses. False-failure rate: 0 on a stock kernel (a reset socket
    is freed at close; the check runs after the run's processes are gone)."""
    from mpcc.testbed import engine
    _ready()
    s = scenario.loads(TWO_LINKS)
    seen: list[list[str]] = []
    with engine.Testbed() as bed:
        st = engine.settings_from(s, runs=1, duration_s=3.0, warmup_s=1.0, algorithm=_algorithms()[1])
        res, _ = engine.run_detailed(s, st, tmp_path / "run", progress=False,
                                     on_built=lambda t: seen.append(_names(t)), bed=bed)
        assert res.groups["mp"].rate_mbps > 1.0, res.to_json()
        assert _open_sockets(seen[0]) == []


@pytest.mark.kernel
@needs_root
@pytest.mark.parametrize("fault", [RuntimeError, KeyboardInterrupt])
def test_nothing_is_left_after_a_run_raises_mid_table(tmp_path, fault):
    """False-failure rate: deterministic: the fault is forced; it asserts what is left. False-failure
    rate 0 on a stock kernel."""
    from mpcc.testbed import engine, netns
    _ready()
    s = scenario.loads(TWO_LINKS)
    first, second = _algorithms()
    before = _registered()
    pids: list[int] = []

    def fail(topo):
        time.sleep(0.2)                                   # linkem is up: its pids are recorded
        pids.extend(int(p) for ns in (lp.relay_ns for lp in topo.links.values())
                    for p in netns.run(["ip", "netns", "pids", ns]).stdout.split())
        raise fault("injected mid-table")

    with pytest.raises(fault, match="injected"):
        with engine.Testbed() as bed:
            engine.run_detailed(s, engine.settings_from(s, duration_s=2.0, warmup_s=0.5, algorithm=first),
                                None, progress=False, bed=bed)
            ours = bed.namespaces
            engine.run_detailed(s, engine.settings_from(s, duration_s=2.0, warmup_s=0.5, algorithm=second),
                                None, progress=False, on_built=fail, bed=bed)
    assert ours and not set(ours) & set(netns.list_netns())
    assert len(pids) == 2 and not [p for p in pids if _alive(p)]
    assert not _left([first, second], before)
    assert not list(netns.RUN_DIR.glob("tb*/owner.json")) or all(
        not set(ours) & set(__import__("json").loads(f.read_text()).get("namespaces", []))
        for f in netns.RUN_DIR.glob("tb*/owner.json"))


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
