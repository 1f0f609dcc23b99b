"""One line for a struct_ops registration that libbpf or the verifier refused, naming its
likely cause from the log's text (never the log itself)."""

from __future__ import annotations

import re
from pathlib import Path


def refusal_reason(log: str, kname: str, obj: Path) -> str:
    """One line for a registration libbpf or the verifier refused — never the verifier log itself:
    a kfunc or a struct field this kernel lacks (an older kernel); a limit of the verifier named
    with its likely cause in the program (stack, an unbounded loop, pending branches, the
    instruction limit), read from the log's text, whatever the kernel's version; else the
    verifier's own verdict (its last error line); with the command that shows the whole log."""
    m = re.search(r"extern \(func ksym\) '(\w+)': not found", log)
    if m:
        return f"{kname}: this kernel has no kfunc {m.group(1)}() the program calls (needs a newer kernel)"
    m = (re.search(r"failed to resolve CO-RE relocation[^\n]*?struct (\w+(?:\.\w+)*)", log)
         or re.search(r"spec is \[\d+\] struct (\w+(?:\.\w+)*)(?=[^\n]*\n(?:[^\n]*\n)*?[^\n]*no matching targets)", log))
    if m:
        return (f"{kname}: this kernel's BTF has no {m.group(1)} that the program reads "
                f"(an older kernel layout; details: bpftool -d struct_ops register {obj})")
    if "CO-RE relocat" in log:
        return f"{kname}: a CO-RE relocation failed on this kernel (details: bpftool -d struct_ops register {obj})"
    m = re.search(r"combined stack size of (\d+) calls is (\d+)", log)
    if m:
        return (f"{kname}: this kernel's verifier allows 512 bytes of stack per call chain and counts "
                f"{m.group(2)} for a chain of {m.group(1)} calls (Linux 6.1 rounds each frame up to 32 bytes; "
                f"python/mpcc/lab/bpf_stack.py {obj} shows the chain)")
    m = re.search(r"invalid (?:read|write) to stack R10 off=-(\d+)", log)
    if m and int(m.group(1)) > 512:
        return (f"{kname}: one function's frame needs {m.group(1)} bytes of the verifier's 512-byte stack "
                f"(likely cause: large local arrays or structs; pass them by pointer or shrink them) "
                f"(full log: bpftool -d struct_ops register {obj})")
    if re.search(r"back-edge|infinite loop detected|unbounded loop", log):
        return (f"{kname}: the verifier cannot bound a loop (likely cause: a loop whose trip count it cannot "
                f"prove finite; give it a constant bound, e.g. for (k = 0; k < MPCC_MAX_ROUTES; k++)) "
                f"(full log: bpftool -d struct_ops register {obj})")
    m = re.search(r"The sequence of (\d+) jumps is too complex", log)
    if m:
        return (f"{kname}: the verifier's limit of pending branches was reached after {m.group(1)} jumps "
                f"(likely cause: a long chain of data-dependent branches in one function; make them "
                f"branch-free or split the function) (full log: bpftool -d struct_ops register {obj})")
    m = re.search(r"BPF program is too large\. Processed (\d+) insn", log)
    if m:
        st = re.search(r"max_states_per_insn (\d+)", log)
        states = f", up to {st.group(1)} states per instruction" if st else ""
        return (f"{kname}: the verifier's instruction limit: it walked {m.group(1)} instructions without finishing"
                f"{states} (likely cause: paths that multiply — data-dependent branches or selections, often in "
                f"a loop, that it cannot prune; make them branch-free with masks or move the body into a global "
                f"(noinline) function, which is verified once) (full log: bpftool -d struct_ops register {obj})")
    body = log.split("-- END PROG LOAD LOG --")[0].split("-- BEGIN PROG LOAD LOG --")[-1]
    lines = [ln.strip() for ln in body.splitlines() if ln.strip() and not ln.startswith(("libbpf:", "Error:"))
             and not re.match(r"(\d+: |;|processed \d+ insn|verification time|stack depth|from \d+ to)", ln.strip())]
    verdict = lines[-1][:160] if lines else "rejected"
    return f"{kname}: the kernel's verifier refused it: {verdict} (full log: bpftool -d struct_ops register {obj})"
