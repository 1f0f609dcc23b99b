"""The BPF stack of a compiled congestion control, as the kernel's verifier adds it up.

    mpcc lab bpf-stack [OBJ.bpf.o ...]      (default: the package's prebuilt objects)

The verifier refuses a program whose call chain (struct_ops program → subprogram → …) needs more
than 512 bytes of stack in all (check_max_stack_depth(): "combined stack size of N calls is X.
Too large"). It sums each frame's stack depth rounded up — and the rounding differs by kernel:

* Debian's 6.1 LTS: each frame to 32 bytes, and at least 32 even for a subprogram that uses no
  stack (``round_up(max(depth, 1), 32)``, the interpreter's granularity);
* newer kernels with the JIT (6.12, 6.18; round_up_stack_depth()): each frame to 16 bytes, and a
  frame without stack costs nothing.

So a deep chain of small math subprograms that 6.12 accepts can exceed 6.1's limit. This reads
the object's code (llvm-objdump): a function's stack is the deepest r10-relative slot it
touches (what the verifier records as the subprogram's stack_depth), and its calls are the
BPF-to-BPF calls (relocations to a function or to .text); kfunc and helper calls add no frame.
It prints, per struct_ops program, the deepest chain under both rules, with each frame's bytes.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mpcc.lab import ROOT
MAX_BPF_STACK = 512
_FUNC = re.compile(r"^([0-9a-f]+) ([lg])\s+F (\S+)\s+([0-9a-f]+) (\S+)$")
_INSN = re.compile(r"^\s*(\d+):\t((?:[0-9a-f]{2} ?)+)\t(.*)$")   # index, raw bytes, text
_RELOC = re.compile(r"^\s*[0-9a-f]+:\s+R_BPF_64_32\s+(\S+)$")
_R10 = re.compile(r"\(r10 - (\d+)\)")


@dataclass
class Func:
    name: str
    section: str
    start: int             # first instruction (8-byte slot) in its section
    end: int
    stack: int = 0         # deepest r10-relative byte touched
    calls: set = field(default_factory=set)


def round_61(depth: int) -> int:
    """Linux 6.1: round_up(max(depth, 1), 32)."""
    return (max(depth, 1) + 31) // 32 * 32


def round_jit(depth: int) -> int:
    """Linux 6.12, 6.18 with the JIT (round_up_stack_depth()): round_up(depth, 16)."""
    return (depth + 15) // 16 * 16


def _objdump(args: list[str]) -> str:
    tool = shutil.which("llvm-objdump") or "llvm-objdump"
    return subprocess.run([tool, *args], capture_output=True, text=True, check=True).stdout


def functions(obj: Path) -> dict[str, Func]:
    """The object's functions with their stack depth and BPF-to-BPF callees."""
    funcs: dict[str, Func] = {}
    for line in _objdump(["-t", str(obj)]).splitlines():
        m = _FUNC.match(line)
        if m:
            start = int(m.group(1), 16) // 8
            funcs[m.group(5)] = Func(m.group(5), m.group(3), start, start + int(m.group(4), 16) // 8)
    by_pos = {(f.section, i): f for f in funcs.values() for i in range(f.start, f.end)}
    starts = {(f.section, f.start): f for f in funcs.values()}
    section, prev, call = "", "", None      # call: (caller, section, index, imm) awaiting its relocation

    def resolve(reloc: str | None) -> None:
        """A call's callee: the function its relocation names; against a section (a static
        function), the one at imm + 1 there; without a relocation, the one at pc + imm + 1."""
        f, sec, idx, imm = call
        if reloc in funcs:
            callee = funcs[reloc]
        else:
            callee = starts.get((reloc, imm + 1) if reloc else (sec, idx + imm + 1))
        if callee:
            f.calls.add(callee.name)

    for line in _objdump(["-d", "-r", str(obj)]).splitlines():
        m = _RELOC.match(line)
        if m and call:
            resolve(m.group(1))
            call = None
            continue
        m = _INSN.match(line)
        if not m and not line.startswith("Disassembly of section "):
            continue
        if call:
            resolve(None)
            call = None
        if not m:
            section = line.removeprefix("Disassembly of section ").rstrip(":")
            continue
        idx, raw, text = int(m.group(1)), m.group(2).split(), m.group(3)
        f = by_pos.get((section, idx))
        if f is None:
            continue
        if raw[0] == "85" and raw[1][0] == "1":          # BPF_CALL with src_reg = BPF_PSEUDO_CALL
            call = (f, section, idx, int.from_bytes(bytes.fromhex("".join(raw[4:8])), "little", signed=True))
        for d in _R10.findall(text):                     # *(u64 *)(r10 - N)
            f.stack = max(f.stack, int(d))
        mm = re.match(r"(r\d+) \+= -(\d+)$", text)        # a stack address: rX = r10; rX += -N
        if mm and prev == f"{mm.group(1)} = r10":
            f.stack = max(f.stack, int(mm.group(2)))
        prev = text
    if call:
        resolve(None)
    return funcs


def deepest(funcs: dict[str, Func], root: str, rnd) -> tuple[int, list[str]]:
    """The chain from ``root`` with the largest rounded sum (the verifier walks every chain)."""
    best = (0, [])
    for c in sorted(funcs[root].calls):
        best = max(best, deepest(funcs, c, rnd), key=lambda t: t[0])
    return rnd(funcs[root].stack) + best[0], [root, *best[1]]


def report(obj: Path) -> list[dict]:
    """Per struct_ops program: its deepest chain under the 6.1 and the 6.12+ rule."""
    funcs = functions(obj)
    rows = []
    for f in funcs.values():
        if f.section != "struct_ops":
            continue
        row = {"program": f.name}
        for label, rnd in (("6.1", round_61), ("6.12+", round_jit)):
            total, chain = deepest(funcs, f.name, rnd)
            row[label] = {"combined": total, "chain": [(c, funcs[c].stack) for c in chain]}
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="The BPF stack of compiled congestion controls, "
                                 "as the 6.1 and the 6.12+ verifiers add it up.")
    ap.add_argument("objects", nargs="*", type=Path, metavar="OBJ.bpf.o",
                    help="objects to read (default: the package's prebuilt objects)")
    args = ap.parse_args(argv)
    objs = args.objects or sorted((ROOT / "python/mpcc/kernel/objects").glob("*.bpf.o"))
    for obj in objs:
        if not obj.is_file():
            ap.error(f"{obj}: no such object (fix: give a .bpf.o path, or run `make setup` to build the prebuilt ones)")
    worst = 0
    for obj in objs:
        rows = report(obj)
        top = max(rows, key=lambda r: r["6.1"]["combined"])
        worst = max(worst, top["6.1"]["combined"])
        for label in ("6.1", "6.12+"):
            d = top[label] if label == "6.1" else max(rows, key=lambda r: r[label]["combined"])[label]
            chain = " → ".join(f"{n} {s}" for n, s in d["chain"])
            flag = "  TOO LARGE" if d["combined"] > MAX_BPF_STACK else ""
            print(f"{obj.name:32s} {label:5s} {d['combined']:4d}{flag}  ({len(d['chain'])} frames: {chain})")
    return 1 if worst > MAX_BPF_STACK else 0


if __name__ == "__main__":
    sys.exit(main())
