"""Network namespaces the testbed owns: creation, commands inside them, ownership records and
cleanup (normal exit, Ctrl-C, and after a crash).

Everything created in the kernel is named ``mpcc-<runid>-…``; ``/run/mpcc/<runid>/owner.json``
records the owning process (pid + its start time, so a reused pid is not mistaken for the
owner), the namespaces and the helper processes. ``cleanup_stale()`` removes the state of runs
whose owner is gone — and only records written by this module (``"kind": "testbed"``).
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EnvironmentProblem

RUN_DIR = Path(os.environ.get("MPCC_RUN_DIR", "/run/mpcc"))
KIND = "testbed"
PREFIX = "mpcc-"


def _proc_start_time(pid: int) -> str | None:
    """Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def alive(pid: int, start_time: str | None) -> bool:
    st = _proc_start_time(pid)
    return st is not None and (start_time is None or st == start_time)


def run(cmd: list[str], *, check: bool = True, ns: str | None = None, timeout: float = 30.0,
        input: str | None = None) -> subprocess.CompletedProcess:
    """Run a command (inside namespace ``ns`` if given); raise with its stderr on failure."""
    if ns is not None:
        cmd = ["ip", "netns", "exec", ns, *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
    if check and p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}: {p.stderr.strip()}")
    return p


_libc = None


def _set_pdeathsig():  # runs in the child between fork and exec
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1: die with the testbed process


def spawn(cmd: list[str], ns: str, *, stdout=None, stderr=None, env=None, stdin=subprocess.DEVNULL) -> subprocess.Popen:
    """Start a long-running process inside ``ns`` (``ip netns exec`` execs, no extra fork)
    that is killed if the testbed process dies."""
    return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], stdin=stdin, stdout=stdout, stderr=stderr,
                            preexec_fn=_set_pdeathsig, env=env, start_new_session=False)


def list_netns() -> list[str]:
    p = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def check_environment() -> None:
    """Raise EnvironmentProblem (one line) when the machine cannot run the testbed."""
    if os.geteuid() != 0:
        raise EnvironmentProblem("the kernel testbed needs root (network namespaces, AF_PACKET) "
                                 "(fix: run it with sudo or as root)")
    for tool, pkg in (("ip", "iproute2"), ("ethtool", "ethtool")):
        if shutil.which(tool) is None:
            raise EnvironmentProblem(f"`{tool}` not found (fix: apt-get install {pkg}, or run `make setup`)")
    if not Path("/proc/sys/net/mptcp/enabled").exists():
        raise EnvironmentProblem("this kernel has no MPTCP (CONFIG_MPTCP) (fix: use Linux ≥ 5.6 built with "
                                 "CONFIG_MPTCP=y)")


@dataclass
class Run:
    """One testbed run's kernel state and its ownership record."""

    runid: str = field(default_factory=lambda: "tb" + secrets.token_hex(3))
    namespaces: list[str] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def record_dir(self) -> Path:
        return RUN_DIR / self.runid

    def ns(self, suffix: str) -> str:
        return f"{PREFIX}{self.runid}-{suffix}"

    def _write_record(self) -> None:
        self.record_dir.mkdir(parents=True, exist_ok=True)
        rec = {"kind": KIND, "pid": os.getpid(), "start_time": _proc_start_time(os.getpid()),
               "namespaces": self.namespaces, "pids": self.pids}
        tmp = self.record_dir / "owner.json.tmp"
        tmp.write_text(json.dumps(rec))
        tmp.replace(self.record_dir / "owner.json")

    def open(self) -> "Run":
        self._write_record()
        return self

    def add_netns(self, suffix: str) -> str:
        name = self.ns(suffix)
        # record first, then create: a crash in between leaves nothing unrecorded
        self.namespaces.append(name)
        self._write_record()
        run(["ip", "netns", "add", name])
        return name

    def spawn(self, cmd: list[str], ns: str, **kw) -> subprocess.Popen:
        p = spawn(cmd, ns, **kw)
        self.procs.append(p)
        self.pids.append(p.pid)
        self._write_record()
        return p

    def stop(self, procs: list[subprocess.Popen]) -> None:
        """Stop ``procs`` (SIGTERM; SIGKILL after 3 s) and drop them from the record."""
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 3.0
        for p in procs:
            try:
                p.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        gone = {id(p) for p in procs}
        self.procs = [p for p in self.procs if id(p) not in gone]
        self.pids = [p.pid for p in self.procs]
        if self.namespaces or self.procs:
            self._write_record()

    def close(self) -> None:
        """Stop processes, delete namespaces, remove the record. Safe to call twice."""
        self.stop(list(self.procs))
        _remove(self.namespaces, [])
        self.namespaces.clear()
        self.pids.clear()
        shutil.rmtree(self.record_dir, ignore_errors=True)

    def __enter__(self) -> "Run":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class Procs:
    """The processes of one run in namespaces a longer-lived :class:`Run` owns (a testbed
    session reuses its namespaces across runs): spawned and recorded through the owner, and
    only these are stopped by :meth:`close` — the namespaces stay."""

    owner: Run
    procs: list[subprocess.Popen] = field(default_factory=list)

    def spawn(self, cmd: list[str], ns: str, **kw) -> subprocess.Popen:
        p = self.owner.spawn(cmd, ns, **kw)
        self.procs.append(p)
        return p

    def close(self) -> None:
        self.owner.stop(self.procs)
        self.procs.clear()


def _remove(namespaces: list[str], pids: list[tuple[int, str | None]]) -> list[str]:
    removed = []
    for pid, st in pids:
        if alive(pid, st):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    existing = set(list_netns())
    for ns in namespaces:
        if ns not in existing:
            continue
        # processes still inside the namespace keep it alive: kill them first
        p = run(["ip", "netns", "pids", ns], check=False)
        for tok in p.stdout.split():
            try:
                os.kill(int(tok), signal.SIGKILL)
            except (ValueError, ProcessLookupError):
                pass
        run(["ip", "netns", "del", ns], check=False)
        removed.append(ns)
    return removed


def cleanup_stale() -> list[str]:
    """Remove namespaces and processes of testbed runs whose owner process is gone; also
    unregister stale mpcc_* struct_ops via the BPF loader when it is available. Returns what
    was removed (namespace names, ``struct_ops:NAME``)."""
    removed: list[str] = []
    if RUN_DIR.is_dir():
        for d in sorted(RUN_DIR.iterdir()):
            f = d / "owner.json"
            try:
                rec = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            if rec.get("kind") != KIND or alive(int(rec["pid"]), rec.get("start_time")):
                continue
            # helper pids were children of the dead owner: they have no start time recorded,
            # so only kill them when their command line is ours (linkem / mpcc traffic)
            pids = [(p, None) for p in rec.get("pids", []) if _ours(p)]
            removed += _remove([n for n in rec.get("namespaces", []) if n.startswith(PREFIX)], pids)
            shutil.rmtree(d, ignore_errors=True)
    try:
        from ..kernel import bpf  # the BPF loader (another module); optional
    except Exception:
        bpf = None
    if bpf is not None and hasattr(bpf, "cleanup_stale"):
        try:
            for name in bpf.cleanup_stale() or []:
                removed.append(f"struct_ops:{name}")
        except Exception:
            pass
    return removed


def _ours(pid: int) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return b"linkem" in cmd or b"mpcc.testbed.traffic" in cmd
