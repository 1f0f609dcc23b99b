"""Prebuilt CO-RE objects shipped in the package, so that a target needs no compiler.

``make bpf-prebuilt`` (part of ``make setup``; ``scripts/build_bpf_prebuilt.py``) compiles
every ``bpf/<algorithm>.bpf.c`` with its default parameters, plus :data:`COMMON_SETS`, each in
the :data:`PREBUILT_BUILDS` (the default build and the compat layer; the diagnostic build is
compiled where it is asked for), into
``python/mpcc/kernel/objects/`` with an ``index.json`` (kernel name, parameters, and the
SHA-256 of the sources and -D flags each object was built from). The objects are CO-RE: every
access to a kernel structure carries a BTF relocation that libbpf resolves against the target
kernel's own BTF at load time, so one object serves every kernel with BTF (checked on 6.1, 6.12
and 6.18 by ``make kernels``).

The loader (:func:`mpcc.kernel.bpf.build`) takes a prebuilt object when the index has the
parameter set and, if the ``bpf/`` sources are present (a checkout), they are the ones it was
built from; otherwise — a new parameter set, or edited sources — it compiles with clang as before.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

PREBUILT_DIR = Path(__file__).with_name("objects")
INDEX = "index.json"
#: parameter sets built besides each algorithm's defaults: the generalized variants of
#: spec/vectors/algorithms.json (the defaults (0.2, 0.5, ∞) are the file's own) and EWTCP's
#: a = 1/n² for two paths, and OLIA's per-ACK update (mptcp_olia.c's, what Peng et al. measured)
COMMON_SETS = ("generalized(beta=0.5, eta=1, n=2)", "generalized(beta=1, eta=0, n=1)", "ewtcp(a=0.25)",
               "coupled-decrease", "coupled-increase", "fully-coupled", "olia(per_ack=1)")
#: the builds shipped of each set (bpf_sources.BUILDS)
PREBUILT_BUILDS = ("default", "compat")


def source_digest(sp, bpf_dir: Path) -> str | None:
    """SHA-256 of what an object is built from: the algorithm file, the shared headers (bpf/include
    and bpf/compat) and the -D flags. None when the sources are not here (an installed package
    without bpf/)."""
    src = bpf_dir / f"{sp.algorithm}.bpf.c"
    if not src.exists():
        return None
    h = hashlib.sha256(src.read_bytes())
    for hdr in sorted([*(bpf_dir / "include").glob("*.h"), *(bpf_dir / "compat").glob("*.h")]):
        h.update(hdr.parent.name.encode() + b"/" + hdr.name.encode() + b"\0" + hdr.read_bytes())
    h.update("\0".join(sp.defines).encode())
    return h.hexdigest()


def _index(directory: Path) -> dict:
    try:
        return json.loads((directory / INDEX).read_text())
    except (OSError, ValueError):
        return {}


def find(sp, bpf_dir: Path, directory: Path = PREBUILT_DIR) -> Path | None:
    """The shipped object of this parameter set, or None (not shipped, or the sources changed)."""
    ent = _index(directory).get("objects", {}).get(sp.stem)
    if not ent or ent.get("kernel_name") != sp.kernel_name:
        return None
    obj = directory / ent["file"]
    if not obj.exists():
        return None
    digest = source_digest(sp, bpf_dir)
    if digest is not None and digest != ent.get("source_sha256"):
        return None
    return obj


def shipped(directory: Path = PREBUILT_DIR) -> list[str]:
    """describe() strings of the parameter sets with a shipped object."""
    return sorted({e.get("describe", stem) for stem, e in _index(directory).get("objects", {}).items()})


def write(directory: Path, built: list[tuple], clang: str, bpf_dir: Path) -> None:
    """Write the index for objects just compiled into ``directory`` — ``built``: (BpfSpec, path)
    pairs — and remove objects of sets no longer built. Called by scripts/build_bpf_prebuilt.py
    (``make bpf-prebuilt``), which does the compiling through the loader."""
    objects = {sp.stem: {"file": obj.name, "algorithm": sp.algorithm, "kernel_name": sp.kernel_name,
                         "params": dict(sp.params), "describe": sp.describe(), "build": sp.build,
                         "source_sha256": source_digest(sp, bpf_dir)} for sp, obj in built}
    keep = {obj.name for _, obj in built}
    for old in directory.glob("*.bpf.o"):
        if old.name not in keep:
            old.unlink()
    index = {"built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "clang": clang, "objects": objects}
    (directory / INDEX).write_text(json.dumps(index, indent=1) + "\n")
