"""The BPF algorithm files ``bpf/<algorithm>.bpf.c``: what the loader knows about each, read from
the file itself, and the host build of the same file for the tests.

An algorithm file declares (``bpf/include/mpcc_algo.h`` describes the shape)::

    #define MPCC_KERNEL_NAME mpcc_ewtcp                       kernel name, default parameters
    #define MPCC_PARAMS(P) P(a, Q32, 1.0, 0.00390625, 65536)  name, encoding, default, min, max
                                                      (Q32: value·2^32; NORM: 1, 2, inf; FLAG: 0, 1)

Nothing else lists the algorithms: :func:`sources` globs ``bpf/*.bpf.c``, so adding a file adds
an algorithm to the loader, ``mpcc kernel``, the testbed and the tests.

Parameters are set per load: every parameter set is its own object, compiled with the encoded
values as ``-DMPCC_PARAM_VALUES=…`` and its own kernel name ``-DMPCC_KERNEL_SYM=…`` — the file's
``MPCC_KERNEL_NAME`` for the default values, otherwise the name's first six characters and 9 hex
digits of SHA-256 of the encoded values (≤ 15 characters, TCP_CA_NAME_MAX). A parameter the
file does not declare, or a value outside [min, max], is a one-line :class:`MpccError`.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from .. import algorithms as _pyalgos
from ..errors import EnvironmentProblem, MpccError

def _bpf_dir() -> tuple[Path, bool]:
    """(directory of the algorithm files, whether it is a checkout's bpf/). An installed package has
    no bpf/ beside it; it carries a copy of the sources its prebuilt objects were built from in
    bpf_prebuilt/src/ (scripts/build_bpf_prebuilt.py), so names, parameters and the clang
    fallback for a new parameter set work there too."""
    checkout = Path(__file__).resolve().parents[3] / "bpf"
    if (checkout / "include" / "mpcc_algo.h").exists():
        return checkout, True
    return Path(__file__).resolve().with_name("objects") / "src", False


BPF_DIR, IN_CHECKOUT = _bpf_dir()
#: the reference's plain aliases ("max" → "lia"); presets with parameters (MTCP's) are PRESETS
ALIASES = {k: name for k, (name, preset) in _pyalgos.ALIASES.items() if not preset}
#: the reference's named parameter sets ("coupled-increase" → mtcp, alpha = 1, beta = 0)
PRESETS = {k: (name, dict(preset)) for k, (name, preset) in _pyalgos.ALIASES.items() if preset}
#: kernel names of parameter sets other than the defaults: prefix (6 characters) + 9 hex digits
HASH_DIGITS = 9
PREFIX_LEN = 6
NORMS = {1.0: 1, 2.0: 2, math.inf: 0}      # NORM encoding: n of ‖x‖_n (0 = ∞)

class BpfUnsupported(MpccError):
    """The kernel cannot run this: no BPF program for the algorithm, or a parameter (or value)
    its program does not take. One line naming it; exit code 2 like every MpccError."""


_P_LINE = re.compile(r"\bP\(\s*(\w+)\s*,\s*(Q32|NORM|FLAG)\s*,\s*([^,()]+?)\s*,\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)")


def _number(text) -> float:
    if isinstance(text, str) and text.strip().lower() in ("inf", "infinity", "∞"):
        return math.inf
    if isinstance(text, bool):
        raise ValueError(text)
    return float(text)


@dataclass(frozen=True)
class Param:
    """One ``P(name, encoding, default, min, max)`` line of an algorithm file."""

    name: str
    encoding: str          # "Q32" (value · 2^32), "NORM" (1, 2, inf → 0) or "FLAG" (0, 1)
    default: float
    lo: float
    hi: float

    def encode(self, v: float) -> int:
        if self.encoding == "NORM":
            return NORMS[v]
        return int(v) if self.encoding == "FLAG" else round(v * 2**32)

    def hash_key(self, v: float) -> str:
        return f"{self.name}_q32={self.encode(v)}" if self.encoding == "Q32" else f"{self.name}={self.encode(v)}"

    def show(self, v: float):
        if self.encoding == "NORM":
            return "inf" if math.isinf(v) else int(v)
        return int(v) if self.encoding == "FLAG" else v


@dataclass(frozen=True)
class Source:
    """One algorithm file."""

    algorithm: str
    path: Path
    kernel_name: str
    params: tuple[Param, ...]

    @property
    def prefix(self) -> str:
        return self.kernel_name[:PREFIX_LEN]


def _parse(path: Path) -> Source:
    text = path.read_text()
    algo = path.name[: -len(".bpf.c")]
    m = re.search(r"^#define\s+MPCC_KERNEL_NAME\s+(\w+)\s*$", text, re.M)
    if not m:
        raise MpccError(f"{path}: no '#define MPCC_KERNEL_NAME mpcc_…' line (fix: add one; see bpf/include/mpcc_algo.h)")
    kname = m.group(1)
    if not kname.startswith("mpcc_") or len(kname) > 15:
        raise MpccError(f"{path}: MPCC_KERNEL_NAME {kname} must start with mpcc_ and have at most 15 characters "
                        "(TCP_CA_NAME_MAX)")
    params = []
    m = re.search(r"^#define\s+MPCC_PARAMS\(P\)((?:.*\\\n)*.*)$", text, re.M)
    if m:
        for name, enc, dflt, lo, hi in _P_LINE.findall(m.group(1)):
            try:
                params.append(Param(name, enc, _number(dflt), _number(lo), _number(hi)))
            except ValueError:
                raise MpccError(f"{path}: P({name}, …): default, min and max must be numbers or INF") from None
    return Source(algo, path, kname, tuple(params))


def sources() -> dict[str, Source]:
    """Every algorithm file in bpf/, by mpcc name (the file's stem), sorted."""
    return {s.algorithm: s for s in map(_parse, sorted(BPF_DIR.glob("*.bpf.c")))}


def algorithms() -> list[str]:
    """mpcc names of the algorithms that have a BPF implementation."""
    return list(sources())


def source(algo: str) -> Source:
    src = sources()
    name = ALIASES.get(algo, algo)
    if name not in src:
        raise BpfUnsupported(f"no BPF congestion control named {algo!r} (fix: use one of: {', '.join(src)})")
    return src[name]


@dataclass(frozen=True)
class BpfSpec:
    """One BPF congestion control: an algorithm file and one set of its parameters."""

    algorithm: str                       # mpcc name ("balia", "ewtcp")
    kernel_name: str                     # ≤ 15 characters (TCP_CA_NAME_MAX)
    params: tuple = ()                   # (("a", 0.25),) in the file's order; () if it has none
    stem: str = ""                       # object file stem in bpf/.output/ ("" = unknown: not buildable)
    defines: tuple = ()                  # clang -D flags: the encoded values and the kernel name (and the build's)
    values: tuple = ()                   # the encoded values (what the program's struct mpcc_params holds)
    build: str = "default"               # one of BUILDS (variant())

    @property
    def source(self) -> Path:
        return BPF_DIR / f"{self.algorithm}.bpf.c"

    def describe(self) -> str:
        if not self.params:
            return self.algorithm
        return f"{self.algorithm}(" + ", ".join(f"{k}={v}" for k, v in self.params) + ")"


def make_spec(algo: str, given: dict | None = None) -> BpfSpec:
    """The object and kernel name of ``algo`` with the parameters ``given`` (others: defaults;
    a preset name such as "coupled-increase" supplies its own). A parameter the BPF program does
    not take, or a value it cannot hold, is an MpccError."""
    if isinstance(algo, str) and algo.strip().lower() in PRESETS:
        algo, preset = PRESETS[algo.strip().lower()]
        given = {**preset, **dict(given or {})}
    src = source(algo)
    given = dict(given or {})
    declared = {p.name: p for p in src.params}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        takes = ", ".join(declared) if declared else "no parameters"
        raise BpfUnsupported(f"{src.algorithm}: unknown parameter(s) {', '.join(unknown)} for the BPF program, which takes "
                        f"{takes} (fix: remove {', '.join(unknown)}, or use the fluid or sim engine)")
    values = {}
    for p in src.params:
        raw = given.get(p.name, p.default)
        try:
            v = _number(raw)
        except (TypeError, ValueError):
            raise MpccError(f"{src.algorithm}: parameters must be numbers (got {p.name}={raw!r})") from None
        if p.encoding == "NORM" and v not in NORMS:
            raise BpfUnsupported(f"{src.algorithm}: {p.name}={v:g} has no BPF implementation (fix: use {p.name} = 1, 2 "
                            f"or inf; the fixed-point header computes ‖x‖_n for those only)")
        if p.encoding == "FLAG" and v not in (0.0, 1.0):
            raise BpfUnsupported(f"{src.algorithm}: {p.name}={v:g} is not a switch value (fix: use {p.name}=0 or "
                                 f"{p.name}=1)")
        if not p.lo <= v <= p.hi:
            raise BpfUnsupported(f"{src.algorithm}: {p.name}={v:g} is out of range for the BPF program "
                            f"(fix: use {p.lo:g} <= {p.name} <= {p.hi:g})")
        values[p.name] = v
    enc = tuple(p.encode(values[p.name]) for p in src.params)
    if all(e == p.encode(p.default) for e, p in zip(enc, src.params)):
        kname, stem = src.kernel_name, src.algorithm
    else:
        key = f"{src.algorithm}:" + ":".join(p.hash_key(values[p.name]) for p in src.params)
        digest = hashlib.sha256(key.encode()).hexdigest()[:HASH_DIGITS]
        kname, stem = src.prefix + digest, f"{src.algorithm}-{digest}"
    params = tuple((p.name, p.show(values[p.name])) for p in src.params)
    defines = ("-DMPCC_PARAM_VALUES=" + ",".join([*(f"{e}ULL" for e in enc), "0"]), f"-DMPCC_KERNEL_SYM={kname}")
    return BpfSpec(src.algorithm, kname, params, stem, defines, enc)


#: the builds of an algorithm file: "default" (the kernel's own loss recovery: cong_avoid,
#: ssthresh, undo_cwnd), "compat" (bpf/compat/: cong_control with the repairs of a kernel that
#: skips struct_ops programs, and the mpcc_health counters), "compat-diag" (compat with the
#: diagnostic maps: trace, window-jump ring, seen subflows). docs/kernel.md "Builds".
BUILDS = ("default", "compat", "compat-diag")
_BUILD_DEFINES = {"default": (), "compat": ("-DMPCC_COMPAT=1",), "compat-diag": ("-DMPCC_COMPAT=1", "-DMPCC_DIAG=1")}


def variant(sp: BpfSpec, build: str) -> BpfSpec:
    """The same parameter set in another build: its own object (stem ``<stem>.<build>`` except for
    the default build) and -D flags; the kernel name is the same."""
    if build not in BUILDS:
        raise MpccError(f"unknown BPF build {build!r} (fix: use one of: {', '.join(BUILDS)})")
    if not sp.stem or sp.build == build:
        return replace(sp, build=build)
    stem = sp.stem.split(".", 1)[0]
    base = tuple(d for d in sp.defines if d not in _BUILD_DEFINES["compat-diag"])
    return replace(sp, build=build, stem=stem if build == "default" else f"{stem}.{build}",
                   defines=base + _BUILD_DEFINES[build])


#: the connection-level mechanisms of bpf/include/mpcc_conn.h, bits of -DMPCC_CONN (docs/testbed.md
#: "The connection level"). A load-time variant: ``MPCC_BPF_CONN`` (comma list, ``all`` or ``none``).
CONN_MECHANISMS = {"sndbuf": 1, "pacing": 2, "penalise": 4}
#: what the loader builds without MPCC_BPF_CONN (bench/kernel/RESULTS.md: none closes the gap)
CONN_DEFAULT = "none"


def conn_mask(text: str | None) -> int:
    """MPCC_BPF_CONN ("sndbuf,penalise", "all", "none"; None or "": CONN_DEFAULT) → the bit mask."""
    text = (CONN_DEFAULT if text is None or not text.strip() else text).strip().lower()
    if text == "none":
        return 0
    if text == "all":
        return sum(CONN_MECHANISMS.values())
    mask = 0
    for item in filter(None, (x.strip() for x in text.split(","))):
        if item not in CONN_MECHANISMS:
            raise MpccError(f"MPCC_BPF_CONN: unknown mechanism {item!r} (fix: a comma list of "
                            f"{', '.join(CONN_MECHANISMS)}, or all, or none)")
        mask |= CONN_MECHANISMS[item]
    return mask


def with_conn(sp: BpfSpec, mask: int) -> BpfSpec:
    """The same parameter set and build with the connection-level mechanisms ``mask``: its own
    object (stem ``<stem>.conn<mask>``) and -DMPCC_CONN; mask 0 is the spec unchanged."""
    if not mask or not sp.stem or any(d.startswith("-DMPCC_CONN=") for d in sp.defines):
        return sp
    return replace(sp, stem=f"{sp.stem}.conn{mask}", defines=(*sp.defines, f"-DMPCC_CONN={mask}"))


def _parse_call(text: str) -> dict:
    """"ewtcp(a=0.25)" → {"name": "ewtcp", "a": "0.25"}."""
    m = re.fullmatch(r"\s*([\w-]+)\s*(?:\((.*)\))?\s*", text)
    if not m:
        raise MpccError(f"cannot read algorithm {text!r} (fix: write e.g. ewtcp(a=0.5) or generalized(beta=0.2, eta=0.5, n=inf))")
    out: dict = {"name": m.group(1)}
    for item in filter(None, (x.strip() for x in (m.group(2) or "").split(","))):
        k, sep, v = item.partition("=")
        if not sep:
            raise MpccError(f"cannot read {item!r} in {text!r} (fix: write name=value)")
        out[k.strip()] = v.strip()
    return out


def _known_hashed(kname: str, output_dir: Path, state_dir: Path) -> BpfSpec | None:
    """Parameters of a hashed kernel name, from the build's sidecar or the ownership record."""
    for src in sources().values():
        if not src.params or kname[:PREFIX_LEN] != src.prefix:
            continue
        for path in (output_dir / f"{src.algorithm}-{kname[PREFIX_LEN:]}.json", state_dir / f"{kname}.json"):
            try:
                params = dict(json.loads(path.read_text()).get("params") or {})
            except (OSError, ValueError):
                continue
            try:
                found = make_spec(src.algorithm, params)
            except MpccError:
                continue
            if found.kernel_name == kname:
                return found
    return None


def spec(algo, output_dir: Path, state_dir: Path) -> BpfSpec:
    """Resolve an algorithm given as a name, a call string ("ewtcp(a=0.25)"), a table
    ({"name": "ewtcp", "a": 0.25}), an Algorithm object, a kernel name, or a BpfSpec."""
    if isinstance(algo, BpfSpec):
        return algo
    if isinstance(algo, dict):
        d = {k: v for k, v in algo.items() if k != "name"}
        return make_spec(ALIASES.get(str(algo.get("name", "")).strip().lower(), str(algo.get("name", ""))), d)
    if hasattr(algo, "params") and hasattr(algo, "name") and not isinstance(algo, str):
        return make_spec(algo.name, dict(algo.params))
    text = str(algo).strip()
    name = text.lower()
    if name.startswith("mpcc_"):
        for src in sources().values():
            if src.kernel_name == name:
                return make_spec(src.algorithm)
        if re.fullmatch(r"mpcc_\w[0-9a-f]{%d}" % HASH_DIGITS, name):
            found = _known_hashed(name, output_dir, state_dir)
            if found:
                return found
            owner = [s.algorithm for s in sources().values() if s.params and s.prefix == name[:PREFIX_LEN]]
            # parameters unknown: still unloadable by name, not buildable
            return BpfSpec(owner[0] if len(owner) == 1 else "unknown", name)
    d = _parse_call(text)
    return make_spec(ALIASES.get(d["name"].lower(), d["name"].lower()), {k: v for k, v in d.items() if k != "name"})


# --- host build (the tests) -------------------------------------------------------------------
class HostMath:
    """The host build of ``bpf/<algorithm>.bpf.c`` (``cc -shared``): the same mpcc_on_ack /
    mpcc_on_loss source the BPF object runs, through the flat ABI of ``bpf/include/mpcc_host.h``.
    Windows in packets·2^32, any RTT unit, parameters as :attr:`BpfSpec.values`."""

    def __init__(self, algo: str, out_dir: Path):
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc is None:
            raise EnvironmentProblem("no C compiler (cc) for the host build of the BPF algorithms "
                                     "(fix: apt-get install gcc)")
        self.source = source(algo)
        out_dir.mkdir(parents=True, exist_ok=True)
        so = out_dir / f"libmpcc_{self.source.algorithm}.so"
        p = subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror", "-shared", "-fPIC",
                            "-I", str(BPF_DIR / "include"), "-o", str(so), str(self.source.path)],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise MpccError(f"host build of {self.source.path.name} failed: {(p.stderr or p.stdout).strip()[-400:]}")
        lib = ctypes.CDLL(str(so))
        u64p = ctypes.POINTER(ctypes.c_uint64)
        args = [ctypes.c_uint32, u64p, u64p, u64p, ctypes.c_uint32, u64p]
        lib.mpcc_host_on_ack.argtypes, lib.mpcc_host_on_ack.restype = args, ctypes.c_int64
        lib.mpcc_host_on_loss.argtypes, lib.mpcc_host_on_loss.restype = args, ctypes.c_uint64
        lib.mpcc_host_cwnd_after_loss.argtypes = [ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint64]
        lib.mpcc_host_cwnd_after_loss.restype = ctypes.c_uint64
        lib.mpcc_host_min_cwnd.argtypes, lib.mpcc_host_min_cwnd.restype = [ctypes.c_uint32], ctypes.c_uint32
        lib.mpcc_host_param_count.restype = ctypes.c_uint32
        lib.mpcc_host_counter_step.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int64]
        lib.mpcc_host_counter_step.restype = ctypes.c_int32
        lib.mpcc_host_counter_increment.argtypes, lib.mpcc_host_counter_increment.restype = [ctypes.c_int64], ctypes.c_int64
        lib.mpcc_host_param_defaults.argtypes = [u64p]
        self.periodic = hasattr(lib, "mpcc_host_on_update")      # MPCC_PERIODIC files only
        if self.periodic:
            lib.mpcc_host_on_update.argtypes = [*args, ctypes.c_uint64, ctypes.c_uint64]
            lib.mpcc_host_on_update.restype = ctypes.c_uint64
            lib.mpcc_host_update_interval_us.argtypes = [u64p]
            lib.mpcc_host_update_interval_us.restype = ctypes.c_uint64
        self.adapts = hasattr(lib, "mpcc_host_on_adapt")          # MPCC_ADAPT files only
        if self.adapts:
            lib.mpcc_host_on_adapt.argtypes, lib.mpcc_host_on_adapt.restype = [u64p, u64p], ctypes.c_uint64
            lib.mpcc_host_adapt_interval_us.argtypes = [u64p]
            lib.mpcc_host_adapt_interval_us.restype = ctypes.c_uint64
        self.lib = lib

    def kernel_name(self) -> str:
        """The kernel name the BPF build's ops table registers (MPCC_KERNEL_SYM: MPCC_KERNEL_NAME
        without -D), as the C preprocessor spells it."""
        return ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(self.lib, "mpcc_host_kernel_name"))).decode()

    def param_count(self) -> int:
        return self.lib.mpcc_host_param_count()

    def default_values(self) -> tuple[int, ...]:
        """The defaults as the C preprocessor encodes them (MPCC_ENC_Q32 / MPCC_ENC_NORM)."""
        out = (ctypes.c_uint64 * 8)()
        self.lib.mpcc_host_param_defaults(out)
        return tuple(out[: self.param_count()])

    @staticmethod
    def _arrays(cwnd, rtt, ell, values):
        arr = ctypes.c_uint64 * 8
        n = len(cwnd)
        ell = list(ell) if ell is not None else [0] * n
        return n, arr(*cwnd), arr(*rtt), arr(*ell), arr(*values)

    def on_ack(self, cwnd, rtt, r: int, values=(), ell=None) -> int:
        """I_r in packets · 2^40."""
        n, c, t, e, v = self._arrays(cwnd, rtt, ell, values)
        return self.lib.mpcc_host_on_ack(n, c, t, e, r, v)

    def on_loss(self, cwnd, rtt, r: int, values=(), ell=None) -> int:
        """D_r in packets · 2^32."""
        n, c, t, e, v = self._arrays(cwnd, rtt, ell, values)
        return self.lib.mpcc_host_on_loss(n, c, t, e, r, v)

    def on_update(self, cwnd, rtt, r: int, values=(), base_rtt=None, adapted: int = 0, w_old: int = 0) -> int:
        """The periodic update (MPCC_PERIODIC): route r's new window in packets · 2^32, with each
        route's minimum RTT ``base_rtt`` in the unit of ``rtt``, the adapted parameter
        ``adapted`` (its encoding; 0 = as loaded) and route r's window the RTT samples were sent
        under, ``w_old`` (packets · 2^32; 0 = the current one)."""
        if not self.periodic:
            raise MpccError(f"{self.source.path.name} has no periodic update (MPCC_PERIODIC)")
        n, c, t, b, v = self._arrays(cwnd, rtt, base_rtt, values)
        return self.lib.mpcc_host_on_update(n, c, t, b, r, v, adapted, w_old)

    def update_interval_us(self, values=()) -> int:
        return self.lib.mpcc_host_update_interval_us((ctypes.c_uint64 * 8)(*values))

    def counter_increment(self, inc: int) -> int:
        """The per-ACK update's counter increment for I_r = inc (packets · 2^40): 2^-10 packets."""
        return self.lib.mpcc_host_counter_increment(inc)

    def counter_steps(self, inc: int, acks: int, cnt: int = 0) -> tuple[list[int], int]:
        """``acks`` ACKs of the per-ACK update with I_r = inc from counter ``cnt``: the window step
        of each (+1, −1, 0) and the counter after them."""
        c = ctypes.c_int64(cnt)
        steps = [self.lib.mpcc_host_counter_step(ctypes.byref(c), inc) for _ in range(acks)]
        return steps, c.value

    def on_adapt(self, value: int, q_sum: int, q_n: int, lost: int, sent: int, values=()) -> int:
        """The slow-timescale adaptation (MPCC_ADAPT): the next value of the adapted parameter
        (FAST: α · 2^32) from the current one (0 = as loaded), the interval's queueing-delay
        samples (Σ in 1/8 µs, count) and its lost and sent packets."""
        if not self.adapts:
            raise MpccError(f"{self.source.path.name} has no slow-timescale adaptation (MPCC_ADAPT)")
        arr = ctypes.c_uint64 * 8
        return self.lib.mpcc_host_on_adapt(arr(value, q_sum, q_n, lost, sent), arr(*values))

    def adapt_interval_us(self, values=()) -> int:
        return self.lib.mpcc_host_adapt_interval_us((ctypes.c_uint64 * 8)(*values))

    def cwnd_after_loss(self, n: int, cwnd: int, dec: int) -> int:
        return self.lib.mpcc_host_cwnd_after_loss(n, cwnd, dec)

    def min_cwnd(self, n: int) -> int:
        return self.lib.mpcc_host_min_cwnd(n)
