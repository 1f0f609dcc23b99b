"""Loader for the BPF struct_ops congestion controls in ``bpf/`` (``mpcc kernel ...``).

Each algorithm is one ``tcp_congestion_ops`` struct_ops object (``bpf/<algo>.bpf.c``), compiled
with clang against a ``vmlinux.h`` generated from the running kernel's BTF (CO-RE), and
registered with ``bpftool struct_ops register`` (libbpf). Registration is kernel-global: the name
(``mpcc_balia`` …) appears in ``net.ipv4.tcp_available_congestion_control`` of every network
namespace, and can be chosen with ``setsockopt(TCP_CONGESTION)`` on an MPTCP socket (upstream
propagates it to every subflow) or per namespace with ``net.ipv4.tcp_congestion_control``.

Ownership. A registration outlives the process that made it (bpftool registers without a
link), so every registration has a record ``/run/mpcc/struct_ops/<kernel name>.json`` listing
its holders (pid + process start time) and whether it was loaded persistently
(``mpcc kernel load``). :func:`load` adds the calling process as a holder (and registers if no
one has); leaving the :class:`Registration` removes it and unregisters when no live holder is
left. :func:`cleanup_stale` unregisters what only dead processes held — after a crash or
SIGKILL — and never touches a struct_ops it has no record for (a registration made outside mpcc
is used but never unregistered, except by an explicit ``unload``).

API used by the testbed (names are a contract): :func:`algorithms`, :func:`kernel_name`,
:func:`load`, :func:`unload`, :func:`status`, :func:`cleanup_stale`, :func:`selected_build`,
:func:`health_counters`.

Builds. Each parameter set compiles in one of :data:`~.bpf_sources.BUILDS`: ``default`` (the
kernel's own loss recovery, as bpf_cubic), or ``compat`` (``bpf/compat/``: for a kernel that
skips struct_ops programs while PID 1 runs, bench/kernel/notes/KERNEL_BUG.md), or ``compat-diag``
(compat with the diagnostic maps, for the tests and bench scripts that read them: ``load(...,
diag=True)``). :func:`detect_build` picks default or compat from facts of the running kernel;
``MPCC_BPF_BUILD=default|compat|compat-diag`` (or ``mpcc kernel load --build``) overrides it.

The algorithms and their parameters are read from the files ``bpf/*.bpf.c`` themselves
(:mod:`.bpf_sources`). Parameters are set per load: each parameter set is one object, compiled
with its values as ``-D`` constants (bpftool cannot set read-only data at registration) and
registered under the file's kernel name for the defaults, or a deterministic hashed name
(``mpcc_e`` + 9 hex digits for ``ewtcp(a=0.25)``). Every function here that takes an algorithm
accepts a name (``"ewtcp"``, the defaults), ``"ewtcp(a=0.25)"`` (``Algorithm.describe()``), a
scenario table ``{"name": "ewtcp", "a": 0.25}``, an ``Algorithm`` object, or the kernel name of a
parameter set built or loaded before. A parameter the program does not take is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EnvironmentProblem, MpccError
from ..filelock import exclusive
from . import prebuilt as _prebuilt
from .build import tool as _tool
from . import sources as _sources
from .sources import ALIASES, BPF_DIR, BUILDS, IN_CHECKOUT, BpfSpec, BpfUnsupported, HostMath, algorithms, conn_mask, make_spec, sources, variant, with_conn  # noqa: F401 (API)


#: where objects compiled on this machine go: bpf/.output in a checkout; for an installed package
#: (whose directory may not be writable) the user's cache directory
OUTPUT_DIR = Path(os.environ.get("MPCC_BPF_OUTPUT") or (
    BPF_DIR / ".output" if IN_CHECKOUT
    else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mpcc" / "bpf"))
STATE_DIR = Path(os.environ.get("MPCC_RUN_DIR", "/run/mpcc")) / "struct_ops"
_APT_FIX = "apt-get install clang llvm bpftool libbpf-dev (or: make setup)"


class BpfBuildError(MpccError):
    """clang or the verifier rejected a program (message carries the last lines of the log)."""


# --- names (the algorithm files themselves: bpf_sources) -------------------------------------
def spec(algo) -> BpfSpec:
    """Resolve an algorithm given as a name, a call string ("ewtcp(a=0.25)"), a table
    ({"name": "ewtcp", "a": 0.25}), an Algorithm object, a kernel name, or a BpfSpec."""
    return _sources.spec(algo, OUTPUT_DIR, STATE_DIR)


def kernel_name(algo) -> str:
    """Kernel name of an mpcc algorithm ("balia" → "mpcc_balia"; a parameter set other than the
    defaults → the default name's first 6 characters + a hash); accepts Algorithm objects and
    scenario tables."""
    return spec(algo).kernel_name


# --- environment ------------------------------------------------------------------------------
def check_environment(need_root: bool = True) -> None:
    """Raise EnvironmentProblem (one line, with the fix) if struct_ops congestion controls cannot
    be loaded here."""
    if need_root and os.geteuid() != 0:
        raise EnvironmentProblem("loading BPF struct_ops needs root (CAP_BPF, CAP_NET_ADMIN) (fix: run as root or "
                                 "with sudo)")
    btf = Path("/sys/kernel/btf/vmlinux")
    if not btf.exists():
        raise EnvironmentProblem("the kernel has no BTF (/sys/kernel/btf/vmlinux missing) "
                                 "(fix: use a kernel built with CONFIG_DEBUG_INFO_BTF=y)")
    if not _btf_has(b"bpf_struct_ops_tcp_congestion_ops"):
        raise EnvironmentProblem("the kernel has no BPF struct_ops for TCP congestion control "
                                 "(fix: use Linux >= 5.6 built with CONFIG_BPF_SYSCALL and CONFIG_BPF_JIT)")
    jit = Path("/proc/sys/net/core/bpf_jit_enable")
    if jit.exists() and jit.read_text().strip() == "0":
        raise EnvironmentProblem("the BPF JIT is off and struct_ops needs it (fix: sysctl -w net.core.bpf_jit_enable=1)")
    if not Path("/proc/sys/net/mptcp/enabled").exists() or not _btf_has(b"mptcp_subflow_context"):
        raise EnvironmentProblem("the kernel has no MPTCP, which the multipath congestion controls need "
                                 "(fix: use a kernel built with CONFIG_MPTCP=y)")
    # clang is needed only for a parameter set the package does not ship (compile_object says so)
    if _tool("bpftool") is None:
        raise EnvironmentProblem(f"bpftool not found: the BPF congestion controls are registered with it "
                                 f"(fix: {_APT_FIX})")


def environment_problem() -> str | None:
    """The one-line reason struct_ops congestion controls cannot be loaded here, or None."""
    try:
        check_environment()
    except EnvironmentProblem as e:
        return str(e)
    return None


_BTF_CACHE: dict[bytes, bool] = {}


def _btf_has(token: bytes) -> bool:
    if token not in _BTF_CACHE:
        try:
            _BTF_CACHE[token] = token in Path("/sys/kernel/btf/vmlinux").read_bytes()
        except OSError:
            _BTF_CACHE[token] = False
    return _BTF_CACHE[token]


def _run(cmd: list[str], what: str, error=MpccError) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        log = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip()]
        tail = " | ".join(log[-4:])
        raise error(f"{what} failed ({' '.join(cmd[:3])} …): {tail}")
    return p.stdout


# --- which build (bpf_build.py) and why a registration was refused (bpf_verifier.py) ---------------
from .build import INIT_PRIVATE, VMLINUX_BTF, build_notice, detect_build, selected_build  # noqa: E402,F401 (API)
from .verifier import refusal_reason  # noqa: E402,F401 (API)


# --- build ------------------------------------------------------------------------------------
def _bpf_arch() -> str:
    m = platform.machine()
    return {"x86_64": "x86", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "powerpc",
            "s390x": "s390", "riscv64": "riscv"}.get(m, m)


def _vmlinux_h() -> Path:
    """vmlinux.h of the running kernel (regenerated when its BTF changes)."""
    btf = Path("/sys/kernel/btf/vmlinux").read_bytes()
    digest = hashlib.sha256(btf).hexdigest()[:16]
    header, stamp = OUTPUT_DIR / "vmlinux.h", OUTPUT_DIR / "vmlinux.btf-sha256"
    if header.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return header
    out = _run([_tool("bpftool"), "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"],
               "generating vmlinux.h from the kernel BTF", EnvironmentProblem)
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)   # absent in a fresh clone
    tmp = header.with_suffix(".tmp")
    tmp.write_text(out)
    tmp.replace(header)
    stamp.write_text(digest + "\n")
    return header


def object_path(algo) -> Path:
    return OUTPUT_DIR / f"{spec(algo).stem}.bpf.o"


def source_headers() -> list[Path]:
    """The headers every object is built from (the shared glue and the compat layer)."""
    return sorted([*(BPF_DIR / "include").glob("*.h"), *(BPF_DIR / "compat").glob("*.h")])


def clang_version() -> str:
    clang = _tool("clang")
    if clang is None:
        return ""
    return subprocess.run([clang, "--version"], capture_output=True, text=True).stdout.split("\n", 1)[0]


def clang_flags(sp: BpfSpec, vmlinux_dir: Path) -> list[str]:
    """clang's flags for one parameter set in its build (tests/kernel/test_bpf_closure.py reads
    the same flags' dependency list)."""
    return ["-g", "-O2", "-target", "bpf", f"-D__TARGET_ARCH_{_bpf_arch()}", "-Wall", "-Werror", *sp.defines,
            "-I", str(vmlinux_dir), "-I", str(BPF_DIR / "include")]


def compile_object(sp: BpfSpec, obj: Path) -> Path:
    """clang one parameter set of an algorithm file into ``obj`` (CO-RE, against vmlinux.h of the
    running kernel's BTF). Needs clang: a target without it uses the package's prebuilt objects."""
    if _tool("clang") is None:
        raise EnvironmentProblem(
            f"clang not found and {sp.describe()} has no prebuilt object in the package (shipped: the defaults "
            f"of every algorithm and {', '.join(_prebuilt.COMMON_SETS)}) (fix: {_APT_FIX}, or load a shipped set)")
    if not sp.source.exists():
        raise MpccError(f"{sp.source}: BPF source not found, cannot build {sp.describe()} "
                        "(fix: run from a checkout of mpcc, or load a parameter set the package ships)")
    tmp = obj.with_suffix(".tmp.o")
    _run([_tool("clang"), *clang_flags(sp, _vmlinux_h().parent), "-c", str(sp.source), "-o", str(tmp)],
         f"compiling {sp.source.name}", BpfBuildError)
    tmp.replace(obj)
    return obj


def build(algo=None, force: bool = False, build: str | None = None) -> list[Path]:
    """The object of each parameter set (all algorithms with their default parameters if None)
    in ``build`` (None: :func:`selected_build`; a BpfSpec's own build if it is not the default):
    the package's prebuilt CO-RE object when it has this set and the sources are unchanged
    (:mod:`.prebuilt`), else bpf/.output/<stem>.bpf.o compiled with clang when the sources
    or the kernel's BTF changed (``force``: always compile). Returns the object paths."""
    check_environment(need_root=False)
    specs = [spec(a) for a in algorithms()] if algo is None else [spec(algo)]
    if build is None and not (len(specs) == 1 and specs[0].build != "default"):
        build = selected_build()[0]
    if build is not None:
        specs = [variant(sp, build) for sp in specs]
    mask = conn_mask(os.environ.get("MPCC_BPF_CONN"))
    specs = [with_conn(sp, mask) for sp in specs]
    out = []
    with exclusive(OUTPUT_DIR / ".lock"):
        for sp in specs:
            if not sp.stem:
                raise MpccError(f"{sp.kernel_name}: parameters unknown (no build record), cannot build it "
                                "(fix: mpcc kernel load NAME -p PARAM=VALUE ...)")
            pre = None if force else _prebuilt.find(sp, BPF_DIR)
            if pre is not None:
                out.append(pre)
                continue
            obj = object_path(sp)
            deps = [sp.source, *source_headers()]
            btf = Path("/sys/kernel/btf/vmlinux")
            stamp = OUTPUT_DIR / "vmlinux.btf-sha256"
            stale = (not stamp.exists() or stamp.read_text().strip()
                     != hashlib.sha256(btf.read_bytes()).hexdigest()[:16])
            if force or stale or not obj.exists() or \
                    obj.stat().st_mtime < max(p.stat().st_mtime for p in deps if p.exists()):
                compile_object(sp, obj)
            if sp.params:   # sidecar: kernel name → parameters (status, unload by kernel name)
                side = OUTPUT_DIR / f"{sp.stem.split('.', 1)[0]}.json"
                if not side.exists():
                    side.write_text(json.dumps({"kernel_name": sp.kernel_name, "algorithm": sp.algorithm,
                                                "params": dict(sp.params)}) + "\n")
            out.append(obj)
    return out


# --- kernel state -----------------------------------------------------------------------------
def struct_ops_maps() -> dict[str, int]:
    """tcp_congestion_ops struct_ops maps bpftool lists: name → newest map id. Includes maps
    already unregistered but not yet freed (sockets still using them keep them alive)."""
    out = _run([_tool("bpftool"), "-j", "struct_ops", "list"], "listing struct_ops", EnvironmentProblem)
    try:
        rows = json.loads(out or "[]")
    except ValueError:
        rows = []
    ids: dict[str, int] = {}
    for r in rows:
        if r.get("kernel_struct_ops") == "tcp_congestion_ops":
            ids[r["name"]] = max(int(r["id"]), ids.get(r["name"], -1))
    return ids


def registered() -> dict[str, int]:
    """Registered (selectable) struct_ops congestion controls: kernel name → map id. A name is
    registered while it is in net.ipv4.tcp_available_congestion_control."""
    avail = set(available_in_kernel())
    return {k: v for k, v in struct_ops_maps().items() if k in avail}


def available_in_kernel() -> list[str]:
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


def _proc_start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]   # field 22: starttime (clock ticks after boot)


def _alive(holder: dict) -> bool:
    st = _proc_start_time(int(holder["pid"]))
    return st is not None and st == holder.get("start_time")


def _record_path(kname: str) -> Path:
    return STATE_DIR / f"{kname}.json"


def _read_record(kname: str) -> dict | None:
    try:
        return json.loads(_record_path(kname).read_text())
    except (OSError, ValueError):
        return None


def _write_record(kname: str, rec: dict) -> None:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = _record_path(kname).with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    tmp.replace(_record_path(kname))


def _me() -> dict:
    """A new hold by this process (the token tells two holds of one process apart)."""
    return {"pid": os.getpid(), "start_time": _proc_start_time(os.getpid()), "token": uuid.uuid4().hex[:12]}


def _allow(kname: str) -> None:
    """Add the name to net.ipv4.tcp_allowed_congestion_control (so unprivileged sockets may pick
    it too); the kernel drops it from the list when the struct_ops is unregistered."""
    path = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
    try:
        allowed = path.read_text().split()
        if kname not in allowed:
            path.write_text(" ".join([*allowed, kname]) + "\n")
    except OSError:
        pass


def _register(sp: BpfSpec) -> int:
    obj = build(sp, build=sp.build)[0]
    p = subprocess.run([_tool("bpftool"), "struct_ops", "register", str(obj)], capture_output=True, text=True)
    if p.returncode != 0:
        raise BpfBuildError(refusal_reason(p.stderr + p.stdout, sp.kernel_name, obj))
    ids = registered()
    kname = sp.kernel_name
    if kname not in ids:
        raise BpfBuildError(f"bpftool reported success but {kname} is not registered")
    _allow(kname)
    return ids[kname]


def _unregister(kname: str) -> bool:
    ids = registered()
    if kname not in ids:
        return False
    p = subprocess.run([_tool("bpftool"), "struct_ops", "unregister", "id", str(ids[kname])],
                       capture_output=True, text=True)
    # EINPROGRESS: already unregistered, the map waits for its last socket to close
    if p.returncode != 0 and "in progress" not in (p.stderr + p.stdout):
        raise MpccError(f"unregistering {kname} (struct_ops id {ids[kname]}) failed: "
                        f"{(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    return True


@dataclass
class Registration:
    """A held registration of one algorithm; a context manager (leaving it releases the hold,
    and unregisters when no live holder remains and it was not loaded persistently)."""

    algorithm: str
    kernel_name: str
    map_id: int
    created: bool                   # this call registered it (False: it was already loaded)
    held: bool = True
    token: str = ""
    params: tuple = ()              # the parameter set, e.g. (("a", 0.25),); () if the program has none
    build: str = "default"          # the build registered (bpf_sources.BUILDS)
    build_reason: str = ""          # why (selected_build), for the one-line notice
    _pid: int = field(default_factory=os.getpid, repr=False)

    def __enter__(self) -> "Registration":
        return self

    def notice(self) -> str:
        """``BPF build: <build> (<why>)``, the line `mpcc kernel load` and testbed runs print."""
        return build_notice(self.build, self.build_reason)

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        if not self.held or os.getpid() != self._pid:   # a forked child never releases
            return
        self.held = False
        _release(self.kernel_name, self.token)


def load(algo, persistent: bool = False, build: str | None = None, diag: bool = False) -> Registration:
    """Register the algorithm's struct_ops (building it if needed) and hold it. Idempotent: if it
    is already registered, only the hold is added. ``persistent`` (``mpcc kernel load``): keep
    it registered after this process exits, until ``unload``. ``build`` and ``diag`` as in
    :func:`selected_build`; a registration already made in another build than one explicitly
    asked for (``build``, ``diag`` or MPCC_BPF_BUILD) is refused in one line (unload it first)."""
    check_environment()
    which, why = selected_build(diag, build)
    explicit = bool(build or diag or os.environ.get("MPCC_BPF_BUILD", "auto").strip().lower() != "auto")
    sp = with_conn(variant(spec(algo), which), conn_mask(os.environ.get("MPCC_BPF_CONN")))
    name, kname = sp.algorithm, sp.kernel_name
    with exclusive(STATE_DIR / ".lock"):
        ids = registered()
        rec = _read_record(kname)
        if rec is None:
            # registered by someone else (no mpcc record): use it, but never unregister it
            rec = {"name": kname, "algorithm": name, "holders": [], "persistent": False,
                   "foreign": kname in ids}
        if sp.params:
            rec["params"] = dict(sp.params)
        rec["holders"] = [h for h in rec.get("holders", []) if _alive(h)]
        hold = None if persistent else _me()
        if hold:
            rec["holders"].append(hold)
        rec["persistent"] = bool(rec.get("persistent")) or persistent
        created = kname not in ids
        if not created and rec.get("build", which) != which:
            if explicit:
                raise MpccError(f"{kname} is loaded as the {rec['build']} build, not {which} "
                                f"(fix: mpcc kernel unload {kname}, then load it again)")
            which, why = rec["build"], rec.get("build_reason", "") + " (loaded before)"
        if created:
            rec["foreign"] = False
            rec["build"], rec["build_reason"] = which, why
        _write_record(kname, rec)          # the record exists before the kernel object does
        try:
            map_id = _register(sp) if created else ids[kname]
        except BaseException:
            if created:
                _record_path(kname).unlink(missing_ok=True)
            raise
        if created:
            rec["registered_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            rec["map_id"] = map_id
            _write_record(kname, rec)
    if rec.get("foreign") and "build" not in rec:
        which, why = "unknown", "registered outside mpcc"
    return Registration(name, kname, map_id, created, held=not persistent, token=hold["token"] if hold else "",
                        params=sp.params, build=which, build_reason=why)


def _release(kname: str, token: str) -> None:
    with exclusive(STATE_DIR / ".lock"):
        rec = _read_record(kname)
        if rec is None:
            return
        rec["holders"] = [h for h in rec.get("holders", []) if _alive(h) and h.get("token") != token]
        if rec["holders"] or rec.get("persistent"):
            _write_record(kname, rec)
            return
        if not rec.get("foreign"):
            _unregister(kname)
        _record_path(kname).unlink(missing_ok=True)


def unload(algo) -> bool:
    """Unregister now, whoever holds it (``mpcc kernel unload``). True if it was registered."""
    check_environment()
    kname = kernel_name(algo)
    with exclusive(STATE_DIR / ".lock"):
        was = _unregister(kname)
        _record_path(kname).unlink(missing_ok=True)
    return was


@dataclass(frozen=True)
class StructOpsStatus:
    """One mpcc_* congestion control: registered? who holds it?"""

    algorithm: str
    kernel_name: str
    registered: bool
    map_id: int | None
    available: bool                 # listed in net.ipv4.tcp_available_congestion_control
    persistent: bool
    holders: tuple[int, ...]        # live holder pids
    owned: bool                     # mpcc has a record for it (False: someone else registered it)
    built: bool
    params: dict = field(default_factory=dict)   # e.g. {"a": 0.25}; {} if none or unknown

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def param_sets_in_use() -> list[BpfSpec]:
    """Parameter sets other than the defaults (hashed kernel names) that are registered or have
    an mpcc record (sorted by kernel name)."""
    prefixes = tuple(src.prefix for src in sources().values() if src.params)
    pattern = r"mpcc_\w[0-9a-f]{%d}" % _sources.HASH_DIGITS
    defaults = {src.kernel_name for src in sources().values()}
    names = set()
    if STATE_DIR.is_dir():
        names |= {p.stem for p in STATE_DIR.glob("mpcc_*.json")}
    try:
        names |= set(registered())
    except MpccError:
        pass
    return [spec(k) for k in sorted(names)
            if k.startswith(prefixes) and k not in defaults and re.fullmatch(pattern, k)]


def status() -> list[StructOpsStatus]:
    """State of every mpcc algorithm's struct_ops: each algorithm with its default parameters,
    and every other parameter set registered or recorded."""
    check_environment()
    ids, avail = registered(), available_in_kernel()
    specs = [spec(a) for a in algorithms()]
    specs += [g for g in param_sets_in_use() if g.kernel_name not in {s.kernel_name for s in specs}]
    out = []
    for sp in specs:
        kname = sp.kernel_name
        rec = _read_record(kname)
        holders = tuple(int(h["pid"]) for h in (rec or {}).get("holders", []) if _alive(h))
        out.append(StructOpsStatus(sp.algorithm, kname, kname in ids, ids.get(kname), kname in avail,
                                   bool((rec or {}).get("persistent")), holders, rec is not None,
                                   bool(sp.stem) and object_path(sp).exists(), dict(sp.params)))
    return out


def cleanup_stale() -> list[str]:
    """Unregister mpcc struct_ops whose holders are all dead (and that were not loaded
    persistently), and drop records of struct_ops that are gone. Returns the names
    unregistered. Never touches a struct_ops without an mpcc record."""
    if os.geteuid() != 0 or _tool("bpftool") is None or not STATE_DIR.is_dir():
        return []
    removed = []
    with exclusive(STATE_DIR / ".lock"):
        ids = registered()
        for path in sorted(STATE_DIR.glob("mpcc_*.json")):
            kname = path.stem
            rec = _read_record(kname)
            if rec is None:
                continue
            live = [h for h in rec.get("holders", []) if _alive(h)]
            if kname not in ids:
                path.unlink(missing_ok=True)
            elif not live and not rec.get("persistent"):
                if not rec.get("foreign") and _unregister(kname):
                    removed.append(kname)
                path.unlink(missing_ok=True)
            elif len(live) != len(rec.get("holders", [])):
                rec["holders"] = live
                _write_record(kname, rec)
    return removed


#: mpcc_health entries (bpf/compat/mpcc_records.h): key → name
HEALTH_KEYS = {1: "cwnd_jump_between_runs", 2: "slow_start_stale_count", 3: "rule_step_jump",
               4: "ssthresh_above_cwnd", 5: "ssthresh_repaired", 6: "cwnd_repaired",
               7: "slow_start_delivered", 8: "init_skipped", 9: "delivered_clamped",
               10: "unseen_delivery_runs", 11: "unseen_delivered_packets", 12: "rate_sample_unreadable"}


def _program_maps(map_id: int) -> dict[str, int]:
    """name → id of the maps the programs of one struct_ops map use."""
    dump = _run([_tool("bpftool"), "-j", "struct_ops", "dump", "id", str(map_id)], "struct_ops dump")
    out: dict[str, int] = {}
    for pid in sorted(set(re.findall(r"/prog_id:(\d+)", dump))):
        prog = json.loads(_run([_tool("bpftool"), "-j", "prog", "show", "id", pid], "prog show"))
        for mid in prog.get("map_ids", []):
            if mid not in out.values():
                m = json.loads(_run([_tool("bpftool"), "-j", "map", "show", "id", str(mid)], "map show"))
                out[m.get("name", "")] = mid
    return out


def health_counters(algo=None) -> dict[str, int] | None:
    """Counts of the compat layer's repairs and of evidence that the kernel skipped a program,
    since each struct_ops was loaded, summed over the registered mpcc congestion controls (or
    ``algo``'s alone): {name: count} for every name of :data:`HEALTH_KEYS` — ssthresh_repaired
    and cwnd_repaired (a skipped ssthresh()/undo_cwnd() left stack garbage, repaired),
    init_skipped, unseen_delivery_runs (a run found ACKs no cong_control was called for), the
    window-jump kinds — each a monotonic counter (wraps at 2^64) until the struct_ops is
    unregistered: take differences between the start and the end of a run. None when nothing
    registered has the counters: the default build (which repairs nothing), a registration made
    outside mpcc, or no root/bpftool. Cost: a few bpftool calls per registered algorithm (tens of
    ms), no kernel work."""
    if os.geteuid() != 0 or _tool("bpftool") is None:
        return None
    try:
        ids = registered()
        if algo is not None:
            kname = kernel_name(algo)
            ids = {kname: ids[kname]} if kname in ids else {}
        total = None
        for kname, map_id in ids.items():
            if not kname.startswith("mpcc_"):
                continue
            mid = _program_maps(map_id).get("mpcc_health")
            if mid is None:
                continue
            rows = json.loads(_run([_tool("bpftool"), "-j", "map", "dump", "id", str(mid)], "reading mpcc_health") or "[]")
            total = total or {name: 0 for name in HEALTH_KEYS.values()}
            for row in rows:
                key, value = row.get("key"), row.get("value")
                key = int(key) if isinstance(key, int) else int.from_bytes(bytes(int(x, 16) for x in key), "little")
                value = int(value) if isinstance(value, int) else int.from_bytes(bytes(int(x, 16) for x in value), "little")
                if key in HEALTH_KEYS:
                    total[HEALTH_KEYS[key]] += value
        return total
    except (MpccError, ValueError, KeyError):
        return None


def bpftool(args: list[str], what: str) -> str:
    """Run ``bpftool ARGS``; its stdout, or one-line MpccError naming ``what``."""
    return _run([_tool("bpftool"), *args], what)
