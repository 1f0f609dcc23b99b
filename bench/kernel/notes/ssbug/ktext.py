"""Disassemble kernel functions of the running kernel (root; bench/kernel/notes/KERNEL_BUG.md).

This testbed has no /proc/kcore, no kprobes and no fentry, so the machine code is read with
bpftrace (a one-shot interval probe that prints the words from bpf_probe_read_kernel) and
disassembled with objdump; call and jump targets are named from /proc/kallsyms. The end of a
function is the next symbol's address.

    python3 bench/kernel/notes/ssbug/ktext.py __bpf_prog_enter bpf__tcp_congestion_ops_ssthresh
"""

from __future__ import annotations

import argparse
import bisect
import re
import shutil
import struct
import subprocess
import sys
import tempfile


def die(msg: str):
    """One line naming the problem and the fix, exit code 2."""
    print(f"ktext: {msg}", file=sys.stderr)
    sys.exit(2)


def kallsyms() -> list[tuple[int, str]]:
    syms = []
    with open("/proc/kallsyms") as f:
        for line in f:
            a, _, name = line.split()[:3]
            if int(a, 16):
                syms.append((int(a, 16), name))
    if not syms:
        die("/proc/kallsyms shows no addresses (fix: run as root, kernel.kptr_restrict <= 1)")
    return sorted(syms)


def read_kernel(addr: int, n: int) -> bytes:
    words = (n + 7) // 8
    prog = ('interval:ms:50 { $i = (uint64)0; while ($i < %d) { '
            'printf("W %%016llx\\n", *(uint64 *)(%du + $i * 8)); $i++; } exit(); }' % (words, addr))
    r = subprocess.run(["bpftrace", "-e", prog], capture_output=True, text=True, timeout=60)
    ws = [int(l.split()[1], 16) for l in r.stdout.splitlines() if l.startswith("W ")]
    if len(ws) != words:
        die(f"bpftrace read {len(ws)} of {words} words at {addr:#x}: {r.stderr.strip()[-300:]}")
    return b"".join(struct.pack("<Q", w) for w in ws)[:n]


def disassemble(name: str, syms: list[tuple[int, str]], limit: int) -> str:
    addrs = [a for a, _ in syms]
    hits = [i for i, (_, s) in enumerate(syms) if s == name]
    if not hits:
        die(f"no symbol {name!r} in /proc/kallsyms (fix: check the name; "
                         "bpf__tcp_congestion_ops_* exist only while a BPF congestion control is registered)")
    out = []
    for i in hits[:1]:
        start = syms[i][0]
        end = next((a for a in addrs[i + 1:] if a > start), start + limit)
        code = read_kernel(start, min(end - start, limit))
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(code)
            f.flush()
            dis = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
                                  f"--adjust-vma={start:#x}", f.name], capture_output=True, text=True,
                                 check=True).stdout

        def name_of(m: re.Match) -> str:
            t = int(m.group(1), 16)
            j = bisect.bisect_right(addrs, t) - 1
            return m.group(0) + (f" <{syms[j][1]}+{t - syms[j][0]:#x}>" if j >= 0 else "")

        body = [l for l in dis.splitlines() if re.match(r"\s*[0-9a-f]+:\t", l)]
        out.append(f"{name} at {start:#x}, {len(code)} bytes")
        out += [re.sub(r"(?:call|jmp|j[a-z]+)\s+0x([0-9a-f]+)$", name_of, l) for l in body]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("symbols", nargs="+")
    ap.add_argument("--max-bytes", type=int, default=1024, help="at most this many bytes per function")
    a = ap.parse_args(argv)
    for t in ("bpftrace", "objdump"):
        if shutil.which(t) is None:
            die(f"{t} not found (fix: apt-get install bpftrace binutils)")
    syms = kallsyms()
    for s in a.symbols:
        print(disassemble(s, syms, a.max_bytes))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
