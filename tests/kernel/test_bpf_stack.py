"""python/mpcc/lab/bpf_stack.py: the verifier's combined-stack sum, read from a compiled object, under
the rounding of Linux 6.1 and of 6.12/6.18 with the JIT; and every program the
package ships fits the 512-byte limit of both (6.1 refused all but EWTCP before the walk got a
frame of its own: bench/kernel/kernels.json, docs/kernel.md "Kernels verified")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpcc.kernel import bpf, prebuilt as bpf_prebuilt

from mpcc.lab import bpf_stack

needs_clang = pytest.mark.skipif(not (shutil.which("clang") and shutil.which("llvm-objdump")),
                                 reason="needs clang and llvm-objdump")

# A struct_ops-shaped program whose frames are set by construction: the program keeps a 400-byte
# array (volatile: every byte is on the stack), calls a chain of four subprograms without stack
# (a global one, which calls three more, the last a static one reached through a .text
# relocation), and a helper, which is no frame.
CHAIN = r"""
typedef unsigned long long u64;
#define SEC(n) __attribute__((section(n), used))
#define NOINLINE __attribute__((noinline))
static long (*trace_printk)(const char *fmt, unsigned int fmt_size, ...) = (void *)6;
static NOINLINE u64 d(u64 x) { return x * 7 + 1; }
NOINLINE u64 c(u64 x) { return d(x) ^ 3; }
NOINLINE u64 b(u64 x) { return c(x) + 5; }
NOINLINE u64 a(u64 x) { return b(x) << 1; }
SEC("struct_ops") u64 prog(u64 *ctx)
{
	volatile u64 big[50];
	int i;

	for (i = 0; i < 50; i++)
		big[i] = ctx[i & 3];
	trace_printk("x", 2);
	return a(big[ctx[0] % 50]);
}
SEC("struct_ops") u64 flat(u64 *ctx) { volatile u64 small[3] = {1, 2, 3}; return small[ctx[0] % 3]; }
char _license[] SEC("license") = "GPL";
"""


def test_rounding_is_the_kernels():
    # Linux 6.1: round_up(max(depth, 1), 32); 6.12+ with the JIT: round_up(depth, 16)
    assert [bpf_stack.round_61(d) for d in (0, 1, 24, 32, 33, 416, 424)] == [32, 32, 32, 32, 64, 416, 448]
    assert [bpf_stack.round_jit(d) for d in (0, 1, 16, 17, 416, 424)] == [0, 16, 16, 32, 416, 432]


@needs_clang
def test_a_chain_of_frames_is_summed_as_the_verifier_does(tmp_path):
    src, obj = tmp_path / "chain.c", tmp_path / "chain.o"
    src.write_text(CHAIN)
    subprocess.run(["clang", "-O2", "-target", "bpf", "-c", str(src), "-o", str(obj)], check=True)
    funcs = bpf_stack.functions(obj)
    assert funcs["prog"].calls == {"a"} and funcs["a"].calls == {"b"} and funcs["c"].calls == {"d"}
    assert funcs["prog"].stack == 400 and funcs["flat"].stack == 24
    assert all(funcs[f].stack == 0 for f in "abcd")
    rows = {r["program"]: r for r in bpf_stack.report(obj)}
    assert [n for n, _ in rows["prog"]["6.1"]["chain"]] == ["prog", "a", "b", "c", "d"]
    assert rows["prog"]["6.1"]["combined"] == 416 + 4 * 32    # > 512: 6.1 refuses it
    assert rows["prog"]["6.12+"]["combined"] == 400            # 6.12+ accepts it
    assert rows["flat"]["6.1"]["combined"] == 32 and rows["flat"]["6.12+"]["combined"] == 32


@needs_clang
@pytest.mark.parametrize("build", bpf.BUILDS)
@pytest.mark.parametrize("algo", [*bpf.algorithms(), *bpf_prebuilt.COMMON_SETS])
def test_every_shipped_program_fits_linux_6_1s_stack_limit(algo, build):
    obj = bpf.build(algo, build=build)[0]
    rows = bpf_stack.report(obj)
    ops = {"init", "avoid", "ssthresh", "cwnd"} | ({"control", "state", "event"} if build != "default" else set())
    assert {r["program"].rsplit("_", 1)[-1] for r in rows} == ops
    worst = max(rows, key=lambda r: r["6.1"]["combined"])
    assert worst["6.1"]["combined"] <= bpf_stack.MAX_BPF_STACK, worst["6.1"]
    assert max(r["6.12+"]["combined"] for r in rows) <= bpf_stack.MAX_BPF_STACK
