"""Churn soak in a freshly booted kernel (root): python/mpcc/lab/churn.py run inside a qemu guest of
Debian's 6.12 or 6.1 kernel, so that its "no kernel warning" check runs on a kernel whose taint is
clean from boot. On a long-running host a WARN_ON_ONCE that
fired earlier in the boot cannot fire again, and the ring buffer forgets it.

    mpcc lab guest-churn [--kernels 6.12,6.1] [--conns 20] [--secs 120] [--rate 20]
                                       [--trace] [--no-lock] [--plan] [--no-record] ALGO ...

The guest is booted by guestvm.py, as the kernel matrix's guests are (kernel package from Debian's
archive, busybox initramfs, the host's root over 9p read-only, this worktree's python and bpftool),
with the modules churn.py needs added (sch_tbf, bridge), and a 32 MB kernel log buffer so that
nothing of the boot scrolls out. One boot per kernel and algorithm, each one hold of
``/tmp/mpcc-bench.lock`` (qemu's TCG keeps both CPUs busy); a boot is refused if its time limit
would exceed 12 minutes.

Inside (``guest_churn.py inside --out DIR ...``) it records the kernel's taint at the start (from
boot: nothing ran before), runs churn.run() (netlab.KernelLog reads /dev/kmsg during the run), then
the whole `dmesg` of the boot, every warning's full trace from it, and the guest's CPU use.
Results: ``bench/kernel/guest_churn.json`` (one entry per boot, appended)."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from mpcc.lab import RESULTS_DIR
from mpcc.lab import guestvm  # noqa: E402
from mpcc.lab import netlab  # noqa: E402

RESULTS = RESULTS_DIR / "guest_churn.json"
#: churn.py's lab: bridges (ThreePathsBridged) and tbf rate limits, on top of the check's modules
CHURN_MODULES = [*guestvm.GUEST_MODULES, "sch_tbf", "bridge"]
#: kernel command line: a log buffer large enough for the whole boot and run (the default 128 kB–1 MB
#: holds ~20 minutes of bridge port messages); the check then needs no luck to see a warning
APPEND = "log_buf_len=32M"
#: under TCG: boot and module load ~40 s, python and the BPF load ~30 s, churn.py's teardown
#: (sockets ≤ 30 s, the leak wait ≤ 60 s), dmesg and power-off
BOOT_ALLOWANCE_S = 300
MAX_HOLD_S = 720          # one hold of the bench lock (PREAMBLE: ≤ 12 min)
#: bad window values the jump check may record: > 10⁶ packets (no
#: window of ours reaches it; a skipped program's unwritten return slot does, 0x81104110 on 6.18)
HUGE = 10**6
TCP_INFINITE_SSTHRESH = 0x7FFFFFFF


class UsageError(ValueError):
    """A bad flag: main() prints it as one line and exits 2."""


# --- pure parts (tests/kernel/test_guest_churn.py) ----------------------------------------------
def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("algorithms", nargs="+", help="mpcc algorithms, or the kernel's reno / cubic")
    ap.add_argument("--kernels", default="6.12", help="comma list of: " + ", ".join(guestvm.SERIES))
    ap.add_argument("--package", action="append", default=[], metavar="SERIES=NAME",
                    help="use this package for a series instead of the newest")
    ap.add_argument("--conns", type=int, default=20,
                    help="MPTCP connections (default %(default)s: what TCG carries at the default rate)")
    ap.add_argument("--secs", type=float, default=120.0, help="churn run length (default %(default)s)")
    ap.add_argument("--rate", type=float, default=20.0, help="Mbit/s per path (default %(default)s)")
    ap.add_argument("--pattern", default="alternate", help="churn.py's --pattern (default %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trace", action="store_true",
                    help="churn.py --trace inside (per-second ss snapshots, the subflow-set check)")
    ap.add_argument("--pm", choices=("kernel", "rejoin"), default="kernel",
                    help="churn.py --pm inside: the client's path manager (default %(default)s)")
    ap.add_argument("--accel", choices=["kvm", "tcg"], default=None)
    ap.add_argument("--cpu", help="qemu CPU model (default: max under TCG), e.g. EPYC-Milan-v1: an AMD "
                    "family 0x19 model, for which the guest kernel enables the SRSO 'Safe RET' return thunk "
                    "as on the 6.18 host")
    ap.add_argument("--no-lock", action="store_true", help=f"do not wait for {guestvm.LOCK}")
    ap.add_argument("--plan", action="store_true", help="print the guest commands; boot nothing")
    ap.add_argument("--no-record", action="store_true", help=f"do not append to {RESULTS.name}")
    a = ap.parse_args(argv)
    a.kernels = [k.strip() for k in a.kernels.split(",") if k.strip()]
    bad = [k for k in a.kernels if k not in guestvm.SERIES]
    if bad:
        raise UsageError(f"--kernels {bad[0]!r}: a guest kernel is one of {', '.join(guestvm.SERIES)} "
                         "(the running kernel: python/mpcc/lab/churn.py)")
    if a.conns < 1 or a.secs < 10 or a.rate <= 0:
        raise UsageError("--conns ≥ 1, --secs ≥ 10 (one progress window) and --rate > 0")
    if timeout_for(a.secs) > MAX_HOLD_S:
        raise UsageError(f"--secs {a.secs:g}: a boot would hold the bench lock up to {timeout_for(a.secs)} s, "
                         f"more than {MAX_HOLD_S} s (fix: --secs ≤ {MAX_HOLD_S - BOOT_ALLOWANCE_S})")
    from mpcc.lab.churn_patterns import PATTERNS
    if a.pattern not in PATTERNS:
        raise UsageError(f"--pattern {a.pattern!r}: one of {', '.join(PATTERNS)}")
    try:
        a.package = guestvm.package_overrides(a.package)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return a


def timeout_for(secs: float) -> int:
    """The boot's time limit: the churn run plus the allowance for boot and teardown."""
    return int(math.ceil(secs)) + BOOT_ALLOWANCE_S


def guest_cmd(a: argparse.Namespace, algo: str, python: str = sys.executable) -> list[str]:
    """The command the guest's init runs (joined with spaces into a shell line: quoted here)."""
    cmd = [python, "-m", "mpcc.lab.guest_churn", "inside", "--out", "/tmp/out", "--conns", str(a.conns),
           "--secs", f"{a.secs:g}", "--rate", f"{a.rate:g}", "--pattern", a.pattern, "--seed", str(a.seed)]
    if a.trace:
        cmd.append("--trace")
    if a.pm != "kernel":
        cmd += ["--pm", a.pm]
    return [shlex.quote(x) for x in [*cmd, algo]]


_END = re.compile(r"---\[ end trace|---\[ end Kernel panic")


def warning_traces(lines: list[str], max_lines: int = 120) -> list[list[str]]:
    """Every warning in a dmesg (netlab.WARN_RE: WARNING, BUG, oops, refcount, lockdep, RCU stall)
    with its whole trace: from that line to the kernel's "---[ end trace" marker (at most
    max_lines; a report without the marker ends at the next warning or the log's end)."""
    out, cur = [], None
    for ln in lines:
        if netlab.WARN_RE.search(ln):
            if cur is not None:
                out.append(cur)
            cur = [ln]
        elif cur is not None:
            if len(cur) < max_lines:
                cur.append(ln)
            if _END.search(ln):
                out.append(cur)
                cur = None
    if cur is not None:
        out.append(cur)
    return out


def huge_windows(jumps: dict | None) -> dict:
    """The window-jump records (churn result's ``cwnd_jumps``) with a window or ssthresh above
    HUGE packets — values no program of ours computes: a skipped program's unwritten return slot
    (0x81104110 on the host) —
    and their distinct values in hex. The ring keeps only the last 64 records: a lower bound."""
    if not jumps:
        return {"records": 0, "huge": 0, "values": []}

    def values(r: dict) -> tuple[int, ...]:
        # TCP_INFINITE_SSTHRESH (0x7fffffff) is the valid ssthresh of a socket still in its first
        # slow start (or undone back to it), not a stale value
        ss = r.get("ssthresh", 0)
        return (r.get("cwnd_after", 0), r.get("cwnd_before", 0), r.get("acked", 0),
                0 if ss == TCP_INFINITE_SSTHRESH else ss)

    huge = [r for r in jumps.get("last", []) if max(values(r)) > HUGE]
    vals = sorted({v for r in huge for v in values(r) if v > HUGE})
    return {"records": len(jumps.get("last", [])), "huge": len(huge), "values": [f"{v:#x}" for v in vals]}


def assemble(guest: dict, series: str, package: str, accel: str, taken: tuple[int, float],
             ended: float, cpu: str | None = None) -> dict:
    """One boot's entry for guest_churn.json from the guest's result.json: where and when it ran
    (UTC, the host's load when the lock was taken, the hold's length), the verdicts a reader looks
    for first, then the guest's whole result (churn.py's dict and the boot's dmesg)."""
    churn = guest.get("churn", {})
    klog = churn.get("kernel_log", {})
    jumps = churn.get("cwnd_jumps")
    return {
        "series": series, "package": package, "kernel": guest.get("kernel"), "accel": accel,
        "cpu": cpu or "default", "guest_cpu": guest.get("cpu"),
        "algorithm": churn.get("algorithm"), "conns": churn.get("conns"), "secs": churn.get("secs"),
        "rate_mbit": churn.get("rate_mbit"), "pattern": churn.get("pattern"), "seed": churn.get("seed"),
        "path_manager": churn.get("path_manager_kind", "kernel"), "path_manager_summary": churn.get("path_manager"),
        "lock_taken_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(taken[0])),
        "host_load_1min": taken[1], "lock_held_s": round(ended - taken[0], 1),
        "taint_at_boot": guest.get("taint_at_start"), "taint_end": guest.get("taint_end"),
        "warnings": klog.get("warnings", []), "warning_traces": guest.get("warning_traces", []),
        "kmsg_records": klog.get("records"), "kmsg_lost": klog.get("lost"), "new_taint": klog.get("new_taint"),
        "cwnd_jumps": None if jumps is None else {k: jumps[k] for k in ("count", "repaired", "delivered",
                                                                       "late_init", "unrepaired", "unseen")
                                                  if k in jumps},
        "huge_windows": huge_windows(jumps),
        "stalled_windows": len(churn.get("stalled_windows", [])), "windows": churn.get("windows"),
        "total_mbit_s": churn.get("total_mbit_s"), "events": churn.get("events"),
        "leaked_maps": churn.get("leaked_maps"), "struct_ops_left": churn.get("struct_ops_left"),
        "netns_left": churn.get("netns_left"), "client_errors": churn.get("client", {}).get("errors"),
        "guest_cpu_busy": guest.get("cpu_busy"), "pass": churn.get("pass"),
        "guest": guest,
    }


# --- inside the guest ---------------------------------------------------------------------------
def inside(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("algorithm")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--conns", type=int, required=True)
    ap.add_argument("--secs", type=float, required=True)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--pattern", default="alternate")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--pm", default="kernel")
    a = ap.parse_args(argv)
    from mpcc.lab import churn
    res = {"kernel": os.uname().release, "taint_at_start": netlab.taint(), "cpu": cpu_model(),
           "uptime_at_start_s": float(Path("/proc/uptime").read_text().split()[0])}
    for cmd in (["ss", "-V"], ["ip", "-V"], ["bpftool", "version"], ["tc", "-V"]):   # warm the 9p cache
        subprocess.run(cmd, capture_output=True)
    busy0, t0 = netlab.cpu_busy_s(), time.monotonic()
    try:
        res["churn"] = churn.run(a.algorithm, a.conns, a.secs, a.rate, a.pattern, a.seed,
                                 trace=Path("/tmp/churn-trace.jsonl") if a.trace else None, pm=a.pm)
    except Exception as e:            # noqa: BLE001 — the boot's dmesg is still worth having
        res["error"] = f"{type(e).__name__}: {e}"
    res["cpu_busy"] = round((netlab.cpu_busy_s() - busy0) / ((time.monotonic() - t0) * os.cpu_count()), 3)
    res["taint_end"] = netlab.taint()
    dmesg = subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()
    res["dmesg"] = dmesg
    res["warning_traces"] = warning_traces(dmesg)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "result.json").write_text(json.dumps(res, indent=1) + "\n")
    return 0 if res.get("churn", {}).get("pass") else 1


def cpu_model() -> dict:
    """The guest CPU as its kernel sees it: model name, family, and the SRSO / retbleed state."""
    info = Path("/proc/cpuinfo").read_text()
    get = lambda k: (re.search(rf"^{k}\s*:\s*(.*)$", info, re.M) or [None, ""])[1]  # noqa: E731
    vul = Path("/sys/devices/system/cpu/vulnerabilities")
    out = {"model_name": get("model name"), "family": get("cpu family")}
    for k in ("spec_rstack_overflow", "retbleed"):
        try:
            out[k] = (vul / k).read_text().strip()
        except OSError:
            out[k] = None
    return out


# --- the host -----------------------------------------------------------------------------------
def record(entries: list[dict], path: Path = RESULTS) -> None:
    try:
        old = json.loads(path.read_text())["runs"]
    except (OSError, ValueError, KeyError):
        old = []
    path.write_text(json.dumps({"runs": old + entries}, indent=1) + "\n")


def one_line(e: dict) -> str:
    return (f"guest_churn: {e['kernel']} {e['algorithm']} ({e.get('path_manager', 'kernel')} path manager): "
            f"{'pass' if e['pass'] else 'FAIL'}: "
            f"{len(e['warnings'])} warnings (taint at boot {e['taint_at_boot']}, end {e['taint_end']}, "
            f"{e['kmsg_lost']} lost), jumps {e['cwnd_jumps']}, huge {e['huge_windows']['huge']}, "
            f"{e['stalled_windows']}/{e['windows']} stalled windows, {e['total_mbit_s']} Mbit/s, "
            f"guest CPU {e['guest_cpu_busy']}, lock {e['lock_taken_utc']} for {e['lock_held_s']} s "
            f"(load {e['host_load_1min']})")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["inside"]:
        return inside(argv[1:])
    try:
        a = parse_args(argv)
    except UsageError as e:
        print(f"guest_churn: error: {e}", file=sys.stderr)
        return 2
    accel = a.accel or guestvm.default_accel()
    packages = {k: a.package.get(k) or guestvm.resolve(k) for k in a.kernels}
    if a.plan:
        for k, pkg in packages.items():
            for algo in a.algorithms:
                print(f"{k}: {pkg}: timeout {timeout_for(a.secs)} s, modules {','.join(CHURN_MODULES)}, "
                      f"append {APPEND!r}: {' '.join(guest_cmd(a, algo))}")
        return 0
    if os.geteuid() != 0:
        print("guest_churn: needs root (qemu, the guest's 9p share): run with sudo", file=sys.stderr)
        return 2
    ok = True
    for k, pkg in packages.items():
        for algo in a.algorithms:
            print(f"guest_churn: {k} ({pkg}): {algo}"
                  + (f" (waiting for {guestvm.LOCK})" if not a.no_lock else ""), flush=True)
            out, guest, error = guestvm.boot(pkg, guest_cmd(a, algo), accel, f"churn-{re.sub(r'[^a-z0-9]+', '_', algo)}",
                                             timeout_for(a.secs), CHURN_MODULES, APPEND, a.cpu, lock=not a.no_lock)
            if guest is None or "churn" not in guest:
                print(f"guest_churn: {k} {algo}: {error or guest.get('error')}", flush=True)
                ok = False
                continue
            e = assemble(guest, k, pkg, accel, guestvm.lock_taken(out), time.time(), a.cpu)
            print(one_line(e), flush=True)
            for tr in e["warning_traces"]:
                print("\n".join(tr), flush=True)
            ok = ok and bool(e["pass"])
            if not a.no_record:
                record([e])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
