"""Which BPF build a load uses: ``default`` (the kernel's own loss recovery) on a stock kernel,
``compat`` (bpf/compat/) on a kernel that skips struct_ops programs while PID 1 runs, decided from
facts of the running kernel; ``compat-diag`` adds the diagnostic maps."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..errors import MpccError
from .sources import BUILDS


def tool(name: str) -> str | None:
    """A command's path: on PATH, else in /usr/sbin or /sbin (root's tools when PATH lacks them)."""
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}")
                                       if os.access(p, os.X_OK)), None)


INIT_PRIVATE = Path("/proc/sys/kernel/init_private")
VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
_SKIPS = "this kernel skips struct_ops programs while PID 1 runs"


def _btf_member(btf: Path, struct: str, member: str, dump=None) -> bool:
    """Whether ``struct`` has a member ``member`` in the BTF file ``btf``: a byte search first
    (the name absent: no), then ``bpftool btf dump file BTF format raw`` (``dump``: a function
    of the path returning that text, for tests)."""
    try:
        if member.encode() not in btf.read_bytes():
            return False
    except OSError:
        return False
    if dump is None:
        def dump(path):
            bpftool = tool("bpftool")
            if bpftool is None:
                return ""
            p = subprocess.run([bpftool, "btf", "dump", "file", str(path), "format", "raw"], capture_output=True, text=True)
            return p.stdout
    inside = False
    for line in dump(btf).splitlines():
        if line.startswith("["):
            inside = f"STRUCT '{struct}'" in line
        elif inside and line.strip().startswith(f"'{member}'"):
            return True
    return False


def detect_build(init_private: Path = INIT_PRIVATE, btf: Path = VMLINUX_BTF, dump=None) -> tuple[str, str]:
    """(build, reason): ``"compat"`` where the running kernel has the platform defect of
    bench/kernel/notes/KERNEL_BUG.md — a patch that skips struct_ops programs not owned by init while
    PID 1 runs — else ``"default"``. Decided from facts of the kernel, never its name: the sysctl
    kernel.init_private (1: the skip is on; 0: off) and, when the sysctl is absent, the member
    ``init_owned`` of ``struct bpf_prog_aux`` in its BTF (the patch's own field; mainline has
    neither). ``init_private``, ``btf`` and ``dump`` (see :func:`_btf_member`) are for tests."""
    try:
        value = init_private.read_text().strip()
    except OSError:
        value = None
    if value is not None:
        if value != "0":
            return "compat", f"{_SKIPS}: kernel.init_private={value}"
        return "default", "kernel.init_private=0: struct_ops programs run whatever task they interrupt"
    if _btf_member(btf, "bpf_prog_aux", "init_owned", dump):
        return "compat", f"{_SKIPS}: its BTF has bpf_prog_aux.init_owned"
    return "default", "stock kernel: no kernel.init_private, no bpf_prog_aux.init_owned"


def selected_build(diag: bool = False, override: str | None = None) -> tuple[str, str]:
    """(build, reason) for a load: ``override`` (``mpcc kernel load --build``), else the
    environment's ``MPCC_BPF_BUILD`` (default, compat, compat-diag; auto or unset: detect),
    else :func:`detect_build`. ``diag`` (the diagnostic maps, which only the compat build has)
    makes it compat-diag."""
    want = (override or os.environ.get("MPCC_BPF_BUILD") or "auto").strip().lower()
    if want not in (*BUILDS, "auto"):
        raise MpccError(f"MPCC_BPF_BUILD / --build: unknown build {want!r} (fix: use auto, {', '.join(BUILDS)})")
    if want == "auto":
        build, reason = detect_build()
    else:
        build, reason = want, ("--build" if override else "MPCC_BPF_BUILD") + f"={want}"
    if diag and build != "compat-diag":
        return "compat-diag", f"diagnostic maps requested ({reason})"
    return build, reason


def build_notice(build: str, reason: str) -> str:
    """The one line `mpcc kernel load` and every testbed run print."""
    return f"BPF build: {build} ({reason})"
