"""Check every BPF congestion control on the kernel this runs on (root): load, register, carry a
2-path MPTCP transfer between two network namespaces, unload. Run by python/mpcc/lab/kernels.py
inside each qemu guest (``--via cli``: ``mpcc kernel load/unload``, as a user would) and on the
running kernel (``--via api``: ``bpf.load()``'s holder-counted registration, so a registration
another process holds on this shared machine is never torn down).

    kernels_check.py --out result.json [--via cli|api] [--secs 2] [--bpf-stats] [ALGO ...]

Per algorithm the row says ``pass`` only if: the load succeeded; the kernel name is in
``bpftool struct_ops list`` and in net.ipv4.tcp_available_congestion_control; both subflows of
one MPTCP connection (one per veth path) showed the kernel name as their congestion control in
``ss -ti`` and each had bytes acknowledged; the server received data; with ``--bpf-stats`` the
struct_ops programs' run count grew during the transfer; and after unload (and the sockets'
close) the name is gone from ``bpftool struct_ops list``. A connection whose second subflow never
appeared gets one more transfer only when ss printed nothing or the client's path manager counted
a dropped ADD_ADDR (pm_dropped_add_addr: a kernel race, not the congestion control); the row then
says ``attempts: 2`` and keeps the first attempt's reason and counters. Otherwise ``status`` is
``fail`` (a check failed) or ``refused`` (the loader said no) and ``reason`` is one line.

The row ``trace:ewtcp`` (TRACE_CHECK) is not a load check: one path through linkem dropping every
200th data packet, two single-route MPTCP connections with the kernel's reno, then one with the
default build's mpcc_ewtcp (a = 1); it passes when every EWTCP loss event sets Reno's ssthresh,
its first 5 windows are within one packet (cwnd_trace.HEAD_SLACK) of both reno runs', and each later
window is within one packet of one a reno run had (cwnd_trace.same_dynamics: reno itself switches
between two cycles one packet apart by ACK timing, so neither order nor cycle is compared). Only
where the loader selects the default build.

The result's ``environment`` also records the kernel's ``tcp_sndbuf_expand`` bytes per segment at
MSS 1460 (``sndbuf_per_mss``: a constant of the kernel's build that the simulator's linux mode
takes as ``[sim] sndbuf_per_mss``; mpcc.testbed.tcpmem), or why it could not be measured.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

from mpcc.lab import netlab  # noqa: E402
from mpcc.lab.netlab import bpf_stats  # noqa: E402

from mpcc.lab import ROOT  # noqa: E402
#: the console script of the environment running this (what a user types), else the module
_SCRIPT = Path(sys.executable).with_name("mpcc")
MPCC = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from mpcc.cli import main; main()"]
#: the window-trace check's row name (not an algorithm: trace_check)
TRACE_CHECK = "trace:ewtcp"


def all_algorithms() -> list[str]:
    """Every BPF program the project ships: one per bpf/*.bpf.c with its default parameters, and
    the common parameter sets the package also ships prebuilt (bpf_prebuilt.COMMON_SETS); then
    the window-trace check."""
    from mpcc.kernel import bpf, prebuilt as bpf_prebuilt
    return [*bpf.algorithms(), *bpf_prebuilt.COMMON_SETS, TRACE_CHECK]
PORT = 5201


def _cli_args(algo: str) -> list[str]:
    """`mpcc kernel load` arguments for an algorithm string."""
    from mpcc.kernel import bpf
    sp = bpf.spec(algo)
    args = [sp.algorithm]
    for k, v in sp.params:
        args += ["-p", f"{k}={v}"]
    return args


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _struct_ops_names() -> set[str]:
    p = subprocess.run(["bpftool", "-j", "struct_ops", "list"], capture_output=True, text=True)
    try:
        return {m.get("name", "") for m in json.loads(p.stdout or "[]")}
    except ValueError:
        return set()


def _struct_ops_runs() -> int:
    """Sum of run_cnt over all struct_ops programs (kernel.bpf_stats_enabled must be 1)."""
    p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    try:
        progs = json.loads(p.stdout or "[]")
    except ValueError:
        return 0
    return sum(int(x.get("run_cnt", 0)) for x in progs if x.get("type") == "struct_ops")


def _available() -> list[str]:
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


#: the path manager's MIB counters recorded when a subflow is missing (nstat, both namespaces)
PM_KEYS = ("MPTcpExtAddAddr", "MPTcpExtAddAddrDrop", "MPTcpExtEchoAdd", "MPTcpExtMPJoinSynRx",
           "MPTcpExtMPJoinSynAckRx", "MPTcpExtMPJoinAckRx", "MPTcpExtMPJoinSynTx", "MPTcpExtMPJoinSynTxCreatSkErr")


def _pm_mib(lab: netlab.TwoPaths) -> dict[str, dict[str, int]]:
    from mpcc.testbed import diag
    return {role: {k: v for k, v in diag.mib(lab.ns[role]).items() if k in PM_KEYS} for role in ("cli", "srv")}


def pm_dropped_add_addr(transfer: dict) -> bool:
    """The client's path manager dropped the server's ADD_ADDR during the transfer: upstream's
    mptcp_pm_add_addr_received() counts MPTCP_MIB_ADDADDRDROP when mptcp_pm_schedule_work() finds
    another path-manager event still pending, and the server re-announces only after
    net.mptcp.add_addr_timeout (120 s). A kernel race, not the congestion control's doing."""
    return transfer.get("pm_mib", {}).get("cli", {}).get("MPTcpExtAddAddrDrop", 0) > 0


def _transfer(lab: netlab.TwoPaths, algo: str, kname: str, secs: float, stats: bool) -> tuple[dict, str | None]:
    runs0 = _struct_ops_runs() if stats else 0
    mib0 = _pm_mib(lab)
    res = lab.transfer(lab.server, secs, [(PORT, "mptcp", kname)])
    runs = _struct_ops_runs() - runs0 if stats else None
    subflows = {}
    for r in res["ss"]:
        if r["peer"].endswith(f":{PORT}"):
            subflows[r["peer"].rsplit(":", 1)[0]] = r
    out = {"received_bytes": res["received"].get(PORT, 0),
           "subflows": {a: {"ca": r["ca"], "bytes_acked": r["bytes_acked"], "cwnd": r["cwnd"]}
                        for a, r in sorted(subflows.items())},
           "mbit_s": round(8 * res["received"].get(PORT, 0) / res["wall_s"] / 1e6, 1)}
    if runs is not None:
        out["struct_ops_runs"] = runs
    paths = ["198.18.1.2", "198.18.2.2"]
    missing = [a for a in paths if a not in subflows]
    if missing:
        out["ss_text"] = res["ss_text"][-3000:]
        from mpcc.testbed import diag
        out["pm_mib"] = {r: diag.mib_delta(mib0[r], after) for r, after in _pm_mib(lab).items()}
        why = " (the client's path manager dropped the ADD_ADDR: MPTcpExtAddAddrDrop)" if pm_dropped_add_addr(out) else ""
        return out, f"no subflow to {', '.join(missing)} during the transfer (ss -ti){why}"
    wrong = [f"{a}: {subflows[a]['ca']}" for a in paths if subflows[a]["ca"] != kname]
    if wrong:
        return out, f"subflow congestion control is not {kname} ({'; '.join(wrong)})"
    idle = [a for a in paths if subflows[a]["bytes_acked"] <= 0]
    if idle:
        return out, f"subflow to {', '.join(idle)} carried no data"
    if out["received_bytes"] <= 0:
        return out, "the server received nothing"
    if runs is not None and runs <= 0:
        return out, "the struct_ops programs never ran (bpf_stats run_cnt unchanged)"
    # the compat build's cong_control read the kernel's rate sample at every ACK (its argument
    # differs between 6.1 and 6.10+: bpf/compat/mpcc_prr.h mpcc_rate_sample); the default build
    # has no cong_control (health_counters: None)
    from mpcc.kernel import bpf
    out["health"] = bpf.health_counters(algo)
    if out["health"] and out["health"]["rate_sample_unreadable"]:
        return out, f"cong_control could not read the rate sample at {out['health']['rate_sample_unreadable']} ACKs"
    return out, None


def check(algo: str, via: str, secs: float, stats: bool, lab: netlab.TwoPaths) -> dict:
    from mpcc.errors import MpccError
    from mpcc.kernel import bpf
    kname = bpf.kernel_name(algo)
    from mpcc.kernel import prebuilt as bpf_prebuilt
    sp = bpf.spec(algo)
    row = {"algorithm": sp.describe(), "kernel_name": kname,
           # the package's CO-RE object (built on the host) or one compiled here against this kernel
           "object": "prebuilt" if bpf_prebuilt.find(sp, bpf.BPF_DIR) else "compiled"}
    t0 = time.monotonic()
    reg = None
    if via == "cli":
        p = subprocess.run([*MPCC, "kernel", "load", *_cli_args(algo)], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
        if p.returncode != 0:
            msg = _one_line(p.stderr or p.stdout)
            return {**row, "status": "refused", "reason": msg, "stderr_lines": len(p.stderr.splitlines())}
    else:
        try:
            reg = bpf.load(algo)
        except MpccError as e:
            return {**row, "status": "refused", "reason": _one_line(str(e)), "stderr_lines": str(e).count("\n") + 1}
    row["load_s"] = round(time.monotonic() - t0, 2)
    reason = None
    try:
        if kname not in _struct_ops_names():
            reason = f"{kname} not in bpftool struct_ops list after load"
        elif kname not in _available():
            reason = f"{kname} not in net.ipv4.tcp_available_congestion_control"
        else:
            row["transfer"], reason = _transfer(lab, algo, kname, secs, stats)
            if reason and reason.startswith("no subflow") and (
                    not row["transfer"].get("ss_text") or pm_dropped_add_addr(row["transfer"])):
                # ss printed nothing (under emulation its first start can outlast the transfer:
                # it samples at 60 %), or the kernel's path manager dropped the ADD_ADDR: one
                # more transfer on a new connection, the first one's reason recorded
                row["first_attempt"] = {"reason": reason, "pm_mib": row["transfer"].get("pm_mib", {})}
                row["transfer"], reason = _transfer(lab, algo, kname, secs, stats)
                row["attempts"] = 2
    except Exception as e:           # noqa: BLE001 — one row fails, the table goes on
        reason = f"transfer failed: {_one_line(str(e))}"
    finally:
        if via == "cli":
            p = subprocess.run([*MPCC, "kernel", "unload", *_cli_args(algo)], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
            if p.returncode != 0 and not reason:
                reason = f"unload: {_one_line(p.stderr)}"
        elif reg is not None:
            reg.release()
    # the kernel frees the struct_ops map when the last socket using it is gone
    deadline = time.monotonic() + 10
    while via == "cli" and kname in _struct_ops_names() and time.monotonic() < deadline:
        time.sleep(0.2)
    if via == "cli" and kname in _struct_ops_names() and not reason:
        reason = f"{kname} still registered 10 s after unload"
    row["status"] = "fail" if reason else "pass"
    if reason:
        row["reason"] = reason
    return row


def trace_check(secs: float, drop_every: int = 200, min_events: int = 8) -> dict:
    """The TRACE_CHECK row: reno:mptcp twice, then the default build's mpcc_ewtcp, loss events
    compared (cwnd_trace.compare); ``fail`` with the first difference otherwise."""
    from mpcc.kernel import bpf
    from mpcc.lab import cwnd_trace
    row = {"algorithm": TRACE_CHECK, "drop_every": drop_every}
    build, why = bpf.selected_build()
    if build != "default":
        return {**row, "status": "refused", "reason": f"needs the default build; this kernel selects {build} ({why})"}
    try:
        with bpf.load("ewtcp"):
            runs = [cwnd_trace.run_one(cc, "mptcp", secs, drop_every) for cc in ("reno", "reno", bpf.kernel_name("ewtcp"))]
    except Exception as e:           # noqa: BLE001 — one row fails, the table goes on
        return {**row, "status": "fail", "reason": f"trace run failed: {_one_line(str(e))}"}
    row["loss_events"] = [r["loss_events"] for r in runs]
    row["reno_repeats"] = cwnd_trace.compare(runs[0], runs[1], min_events) is None
    reason = cwnd_trace.same_dynamics(runs[2], runs[:2], min_events=min_events)
    return {**row, "status": "fail" if reason else "pass", **({"reason": reason} if reason else {}),
            "common_events": min(len(r["loss_events"]) for r in runs)}


def sndbuf_per_mss(mss: int = 1460) -> int | str:
    """The kernel's tcp_sndbuf_expand bytes per segment (the simulator's ``[sim] sndbuf_per_mss``),
    measured by mpcc.testbed.tcpmem, or the one-line reason it could not be."""
    from mpcc.errors import EnvironmentProblem
    from mpcc.testbed.tcpmem import kernel_sndbuf_per_mss
    try:
        return kernel_sndbuf_per_mss(mss)
    except EnvironmentProblem as e:
        return str(e)


def environment() -> dict:
    from mpcc.kernel import bpf
    tools = {}
    for cmd in (["clang", "--version"], ["bpftool", "version"]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        tools[cmd[0]] = _one_line(p.stdout.splitlines()[0] if p.stdout else p.stderr)
    return {"kernel": platform.release(), "machine": platform.machine(),
            "btf": Path("/sys/kernel/btf/vmlinux").exists(), "tools": tools,
            "environment_problem": bpf.environment_problem(), "sndbuf_per_mss": sndbuf_per_mss()}


def _check_all(a: argparse.Namespace, result: dict) -> None:
    """Every algorithm's row into result["rows"] (refused ones too)."""
    if result["environment"]["environment_problem"]:
        result["rows"] = [{"algorithm": x, "status": "refused", "reason": result["environment"]["environment_problem"]}
                          for x in a.algorithms or all_algorithms()]
    else:
        for cmd in (["ss", "-V"], ["ip", "-V"], ["bpftool", "version"]):    # warm caches (9p root)
            subprocess.run(cmd, capture_output=True)
        with netlab.TwoPaths() as lab:
            for algo in a.algorithms or all_algorithms():
                if algo == TRACE_CHECK:
                    continue
                row = check(algo, a.via, a.secs, a.bpf_stats, lab)
                print(json.dumps(row), flush=True)
                result["rows"].append(row)
        if TRACE_CHECK in (a.algorithms or all_algorithms()):
            row = trace_check(max(a.secs, 8.0))
            print(json.dumps(row), flush=True)
            result["rows"].append(row)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("algorithms", nargs="*")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--via", choices=["cli", "api"], default="cli")
    ap.add_argument("--secs", type=float, default=2.0)
    ap.add_argument("--bpf-stats", action="store_true",
                    help="enable kernel.bpf_stats_enabled and require the programs' run count to grow "
                         "(a global sysctl: set back to its value on exit)")
    a = ap.parse_args(argv)
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    dmesg0 = len(subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines())
    result = {"environment": environment(), "via": a.via, "secs": a.secs,
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": []}
    with contextlib.ExitStack() as restore:
        if a.bpf_stats:            # the sysctl is set back on the way out (exception, Ctrl-C too)
            restore.enter_context(bpf_stats())
        _check_all(a, result)
    # kernel warnings during the run (WARN_ON, BUG, oops, lockdep, RCU stalls): lines added since start
    p = subprocess.run(["dmesg"], capture_output=True, text=True)
    result["dmesg_warnings"] = [ln for ln in p.stdout.splitlines()[dmesg0:]
                                if re.search(r"WARNING:|BUG:|Oops|general protection|rcu_sched detected|"
                                             r"possible circular locking|refcount_t:", ln)][:20]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if all(r["status"] == "pass" for r in result["rows"]) and not result["dmesg_warnings"] else 1


if __name__ == "__main__":
    sys.exit(main())
