"""Kernel × algorithm verification (`make kernels`, root): every BPF congestion control loads, registers,
carries a 2-path MPTCP transfer and unloads on Debian's 6.1 LTS and 6.12 LTS kernels (booted under
qemu/KVM) and on the running kernel.

    mpcc lab kernels [--kernels 6.1,6.12,running] [--plan] [--package 6.1=linux-image-…]

``--kernels`` also takes Debian's rt and cloud flavours (``6.12-rt``, ``6.1-cloud``, …) and whole
package names (``linux-image-6.1.0-50-amd64``).

How a guest is fetched, checked, built and booted (nothing downloaded outside Debian's archive,
nothing installed on the host) is guestvm.py. A kernel whose config lacks what the check needs is
not booted: each of its rows says which options are missing. Inside a guest,
``python/mpcc/lab/kernels_check.py --via cli --bpf-stats`` runs ``mpcc kernel load``, the transfer,
``mpcc kernel unload`` per algorithm and writes its JSON (rules in that file).

The results go to ``bench/kernel/kernels.json`` and the table between the markers in docs/kernel.md,
with a line of each kernel's measured ``tcp_sndbuf_expand`` bytes per segment.
Everything runs under ``flock /tmp/mpcc-bench.lock``: the running-kernel check makes transfers on
the host's CPUs, and a guest (qemu, both CPUs under TCG) would perturb others' measurements. A
guest boots for at most ``--per-boot`` algorithms (one lock hold each, a few minutes), so that other
users of the lock interleave; the boots' rows make one column.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from mpcc.lab.guestvm import (BUSYBOX, CACHE, LOCK, SERIES, Unsupported, boot, default_accel,  # noqa: E402
                     guest_plan, kernel_config, lock_taken, package_overrides, qemu_cmd, release_of,
                     resolve, series_of)

from mpcc.lab import RESULTS_DIR, ROOT
RESULTS = RESULTS_DIR / "kernels.json"
DOC = ROOT / "docs" / "kernel.md"
PER_BOOT = 9               # algorithms per guest boot (TCG: ~35 s each, so a lock hold stays < 7 min)


def check_cmd(via: str, algorithms: list[str], secs: float) -> list[str]:
    cmd = [sys.executable, "-m", "mpcc.lab.kernels_check", "--via", via, "--secs", str(secs)]
    return cmd + [f"'{a}'" if via == "cli" else a for a in algorithms]


def run_guest(package: str, algorithms: list[str], secs: float, accel: str, per_boot: int = PER_BOOT,
              lock: bool = True) -> dict:
    """One column: the algorithms in boots of at most ``per_boot``, each under the bench lock. A boot
    that gave no result fails each of its algorithms with its reason."""
    parts = []
    for i in range(0, len(algorithms), per_boot):
        part = run_boot(package, algorithms[i:i + per_boot], secs, accel, i // per_boot, lock=lock)
        if part.get("error") and not part["rows"]:
            part["rows"] = [{"algorithm": a, "status": "unsupported" if part.get("unsupported") else "fail",
                             "reason": part["error"]} for a in algorithms[i:i + per_boot]]
        parts.append(part)
    res = next((p for p in parts if not p.get("error")), parts[0])
    res = {**res, "rows": [row for p in parts for row in p["rows"]],
           "guest_s": round(sum(p.get("guest_s", 0) for p in parts), 1), "boots": len(parts)}
    errors = [p["error"] for p in parts if p.get("error")]
    if errors:
        res["error"] = "; ".join(errors)
    return res


def run_boot(package: str, algorithms: list[str], secs: float, accel: str, boot_no: int = 0, lock: bool = True) -> dict:
    cmd = check_cmd("cli", algorithms, secs) + ["--bpf-stats", "--out", "/tmp/out/result.json"]
    print(f"kernels: {release_of(package)}: boot {boot_no + 1}: {', '.join(algorithms)}"
          + (f" (waiting for {LOCK})" if lock else ""), flush=True)
    out, res, error = boot(package, cmd, accel, f"boot{boot_no}", lock=lock)
    if res is None:
        return {**_broken(package, error), "unsupported": isinstance(error, Unsupported)}
    res["package"] = package
    taken = lock_taken(out)[0]
    res["guest_s"] = round(time.time() - taken, 1)       # boot to power-off (the lock hold), no waiting
    res["accel"] = accel
    return res


def _broken(package: str, reason: str) -> dict:
    return {"package": package, "environment": {"kernel": release_of(package)}, "error": reason, "rows": []}


def run_running(algorithms: list[str], secs: float, lock: bool = True) -> dict:
    out = CACHE / "out" / "running.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    subprocess.run([*(["flock", LOCK] if lock else []), *check_cmd("api", algorithms, secs), "--out", str(out)],
                   env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    if not out.exists():
        return _broken("running", "the check wrote no result")
    res = json.loads(out.read_text())
    res["package"] = "running kernel"
    return res


# --- report ----------------------------------------------------------------------------------
def table(results: list[dict]) -> str:
    """Markdown: one row per algorithm, one column per kernel; cells pass / the one-line reason."""
    algos: list[str] = []
    for r in results:
        for row in r["rows"]:
            if row["algorithm"] not in algos:
                algos.append(row["algorithm"])
    head = ["algorithm"] + [f"{r['environment']['kernel']}" for r in results]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in algos:
        cells = []
        for r in results:
            row = next((x for x in r["rows"] if x["algorithm"] == a), None)
            if row is None:
                cells.append(r.get("error", "not run"))
            elif row["status"] == "pass":
                cells.append("pass")
            else:
                reason = row.get("reason", "").removeprefix("mpcc: error: ")
                cells.append(f"{row['status']}: {reason}".replace("|", "/"))
        lines.append(f"| `{a}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_mss_line(results: list[dict]) -> str:
    """Each kernel's measured tcp_sndbuf_expand bytes per segment (kernels_check.sndbuf_per_mss)."""
    cells = []
    for r in results:
        v = r["environment"].get("sndbuf_per_mss")
        cells.append(f"{r['environment']['kernel']} {v if isinstance(v, int) else 'not measured'}")
    return ("Send buffer per segment (`tcp_sndbuf_expand`'s per_mss at MSS 1460, the simulator's "
            "`[sim] sndbuf_per_mss`; mpcc/testbed/tcpmem.py): " + ", ".join(cells) + ".")


def merge(results: list[dict], rows_only: bool = False) -> list[dict]:
    """This run's columns replace the same series in bench/kernel/kernels.json; the others stay
    (each column keeps its own date), in the order 6.1, 6.12, running. ``rows_only`` (a run of
    some algorithms): only their rows replace those of the recorded column of the same kernel
    release, the other rows stay (each row keeps its own date)."""
    try:
        old = {r["series"]: r for r in json.loads(RESULTS.read_text())["results"]}
    except (OSError, ValueError, KeyError):
        old = {}
    for res in results:
        prev = old.get(res["series"])
        if rows_only and prev and prev["environment"].get("kernel") == res["environment"].get("kernel"):
            new = {x["algorithm"]: x for x in res["rows"]}
            rows = [new.pop(x["algorithm"], x) for x in prev["rows"]] + list(new.values())
            res = {**prev, "rows": rows, "date": res["date"],      # the column's time: all its boots
                   "environment": {**prev["environment"], **res["environment"]},
                   "guest_s": round(prev.get("guest_s", 0) + res.get("guest_s", 0), 1),
                   "boots": prev.get("boots", 0) + res.get("boots", 0)}
        old[res["series"]] = res
    order = [*SERIES, "running"]
    return sorted(old.values(), key=lambda r: order.index(r["series"]) if r["series"] in order else 99)


def record(results: list[dict], rows_only: bool = False) -> None:
    """Merge columns into bench/kernel/kernels.json and rewrite the table in docs/kernel.md."""
    merged = merge(results, rows_only)
    RESULTS.write_text(json.dumps({"host_kernel": os.uname().release, "results": merged}, indent=1) + "\n")
    write_doc(merged)


def write_doc(results: list[dict]) -> None:
    begin, end = "<!-- kernels:begin -->", "<!-- kernels:end -->"
    text = DOC.read_text()
    if begin not in text:
        raise SystemExit(f"{DOC}: no '{begin}' marker (fix: add the kernel table section back)")
    pkgs = "; ".join(f"{r['environment']['kernel']}: {r['package']}, {r.get('date', '?')}"
                     + (f", qemu {r['accel']}" if r.get("accel") else "") for r in results)
    body = f"{begin}\nRecorded by `make kernels` ({pkgs}).\n\n{table(results)}\n\n{per_mss_line(results)}\n{end}"
    DOC.write_text(re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: body, text, flags=re.S))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="6.1,6.12,running",
                    help="comma list of: " + ", ".join(SERIES) + ", running, or Debian package names (linux-image-…-amd64)")
    ap.add_argument("--package", action="append", default=[], metavar="SERIES=NAME",
                    help="use this package for a series instead of the newest (e.g. 6.1=linux-image-6.1.0-50-amd64)")
    ap.add_argument("--secs", type=float, default=5.0,
                    help="transfer length per algorithm (ss samples the subflows at 60%%; under TCG a "
                         "process start takes ~1 s, so not much shorter)")
    ap.add_argument("--accel", choices=["kvm", "tcg"], default=None,
                    help="qemu accelerator (default: kvm unless /dev/kvm cannot boot a stock kernel)")
    ap.add_argument("--no-lock", action="store_true",
                    help=f"do not wait for {LOCK} (a quick debug run, or when the caller holds it; others' timing may suffer)")
    ap.add_argument("--per-boot", type=int, default=PER_BOOT,
                    help="guests: algorithms per boot, each boot one hold of the bench lock (default %(default)s)")
    ap.add_argument("--plan", action="store_true", help="print the packages and commands; run nothing")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/kernel.md and kernels.json")
    ap.add_argument("algorithms", nargs="*",
                    help="only these (default: all); their rows replace the same rows of the recorded columns")
    a = ap.parse_args(argv)
    from mpcc.lab.kernels_check import all_algorithms
    algorithms = a.algorithms or all_algorithms()
    names = [k.strip() for k in a.kernels.split(",") if k.strip()]
    bad = [k for k in names if series_of(k) is None]
    if bad:
        print(f"kernels: unknown kernel {bad[0]!r} (fix: --kernels from {', '.join(SERIES)}, running, "
              "or a Debian package name linux-image-…-amd64)", file=sys.stderr)
        return 2
    try:
        override = package_overrides(a.package)
    except ValueError as e:
        print(f"kernels: {e}", file=sys.stderr)
        return 2
    chosen = [series_of(k) for k in names]
    accel = a.accel or default_accel()
    packages = {k: override.get(k) or (name if name.startswith("linux-image-") else resolve(k))
                for k, name in zip(chosen, names) if k != "running"}
    if a.plan:
        for k, pkg in packages.items():
            rel = release_of(pkg)
            tree = CACHE / rel
            cached = (tree / "boot" / f"vmlinuz-{rel}").exists()
            share, reason = guest_plan(kernel_config(tree, rel)) if cached else (None, None)
            how = (f": cannot run: {reason}" if reason else f", host files over {share}" if share
                   else ", host files over 9p or virtiofs (read from its config once downloaded)")
            print(f"{k}: {pkg} ({'cached' if cached else 'apt-get download'}) → {tree}{how}")
            print("   " + " ".join(qemu_cmd(tree, rel, CACHE / "out" / rel / "initrd.cpio", CACHE / "out" / rel,
                                            accel, share=share or "9p")))
        if "running" in chosen:
            print("running: " + " ".join(check_cmd("api", algorithms, a.secs)))
        print("algorithms: " + ", ".join(algorithms))
        return 0
    if os.geteuid() != 0:
        print("kernels: needs root (qemu with KVM, BPF, network namespaces): run with sudo", file=sys.stderr)
        return 2
    for tool in ("qemu-system-x86_64", "flock", "dpkg-deb"):
        if not shutil.which(tool):
            print(f"kernels: {tool} not found (fix: apt-get install qemu-system-x86 util-linux dpkg)", file=sys.stderr)
            return 2
    if not BUSYBOX.exists():
        print("kernels: needs /bin/busybox (fix: apt-get install busybox-static)", file=sys.stderr)
        return 2
    results = []
    for k in chosen:
        print(f"kernels: {k} …", flush=True)
        res = run_running(algorithms, a.secs, not a.no_lock) if k == "running" else \
            run_guest(packages[k], algorithms, a.secs, accel, max(1, a.per_boot), not a.no_lock)
        res["series"] = k
        res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        for row in res["rows"]:
            row["date"] = res["date"]
        results.append(res)
        if not a.no_doc:             # recorded per kernel: a later one may wait long for the lock
            record([res], rows_only=bool(a.algorithms))
        bad_rows = [r["algorithm"] for r in res["rows"] if r["status"] != "pass"]
        print(f"kernels: {res['environment']['kernel']}: {len(res['rows']) - len(bad_rows)}/{len(res['rows'])} pass"
              + (f"; {res['error']}" if res.get("error") else "") + (f"; not passing: {', '.join(bad_rows)}" if bad_rows else ""),
              flush=True)
    print(table(results))
    return 0 if all(r["status"] == "pass" for res in results for r in res["rows"]) and \
        all(not res.get("error") for res in results) else 1


if __name__ == "__main__":
    sys.exit(main())
