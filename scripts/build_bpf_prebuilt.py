"""`make bpf-prebuilt`: compile the CO-RE objects the package ships (python/mpcc/kernel/objects/):
every bpf/<algorithm>.bpf.c with its default parameters and bpf_prebuilt.COMMON_SETS, in each of
bpf_prebuilt.PREBUILT_BUILDS (the default build and the compat layer), through the
loader's own compile step (clang, vmlinux.h of this machine's BTF), then write the index and a copy
of the sources (bpf_prebuilt/src/) for the installed package. The objects compile in parallel, one
clang per CPU (each writes its own file; vmlinux.h is generated once, before)."""

from __future__ import annotations

import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def main() -> int:
    from mpcc.errors import MpccError
    from mpcc.kernel import bpf, prebuilt as bpf_prebuilt
    if not Path("/sys/kernel/btf/vmlinux").exists():
        print("bpf-prebuilt: skipped: this machine's kernel has no BTF to generate vmlinux.h from "
              "(the package then compiles on the target)", file=sys.stderr)
        return 0
    out = bpf_prebuilt.PREBUILT_DIR
    out.mkdir(parents=True, exist_ok=True)
    try:
        sets = [bpf.spec(a) for a in bpf.algorithms()] + [bpf.spec(s) for s in bpf_prebuilt.COMMON_SETS]
        specs = [bpf.variant(sp, b) for b in bpf_prebuilt.PREBUILT_BUILDS for sp in sets]
        bpf._vmlinux_h()
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            objs = list(pool.map(lambda sp: bpf.compile_object(sp, out / f"{sp.stem}.bpf.o"), specs))
        built = list(zip(specs, objs))
    except MpccError as e:
        print(f"bpf-prebuilt: error: {e}", file=sys.stderr)
        return 2
    bpf_prebuilt.write(out, built, bpf.clang_version(), bpf.BPF_DIR)
    # the sources the objects were built from, for an installed package (no bpf/ beside it): the
    # loader reads algorithm names and parameters from them and compiles a new parameter set
    src = out / "src"
    shutil.rmtree(src, ignore_errors=True)
    (src / "include").mkdir(parents=True)
    (src / "compat").mkdir(parents=True)
    for f in [*bpf.BPF_DIR.glob("*.bpf.c"), *bpf.source_headers()]:
        shutil.copy2(f, src / f.relative_to(bpf.BPF_DIR))
    print(f"bpf-prebuilt: {len(built)} objects in {out} ({', '.join(sp.describe() for sp, _ in built[:len(sets)])}; "
          f"builds: {', '.join(bpf_prebuilt.PREBUILT_BUILDS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
