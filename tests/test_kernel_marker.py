"""The kernel marker's guard (tests/conftest.py): a test not marked kernel cannot act on the kernel,
neither in its own process nor in the processes it starts; `make test` runs such tests in parallel.
Each check uses an action that, were the guard missing, would fail harmlessly in another way (a
namespace or object that does not exist), so that this test never changes the kernel itself."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

NODE = "tests/test_kernel_marker.py::"


def test_the_testbed_and_loader_refuse_in_an_unmarked_test():
    from mpcc.kernel import bpf
    from mpcc.testbed import netns
    with pytest.raises(RuntimeError, match=r"is not marked kernel.*fix: add @pytest.mark.kernel") as e:
        netns.Run(runid="guardcheck").add_netns("x")
    assert type(e.value).__name__ == "KernelActionInUnmarkedTest" and str(e.value).startswith(NODE)
    with pytest.raises(RuntimeError, match="registers a BPF struct_ops"):
        bpf._register(None)
    with pytest.raises(RuntimeError, match="starts a process in a network namespace"):
        netns.spawn(["true"], "mpcc-guardcheck-none")


@pytest.mark.parametrize("cmd,what", [
    (["ip", "netns", "exec", "mpcc-guardcheck-none", "true"], "ip netns exec"),
    (["ip", "-n", "mpcc-guardcheck-none", "link", "set", "lo", "up"], "ip -n"),
    (["tc", "qdisc", "add", "dev", "mpcc-guardcheck-none", "root", "netem"], "tc qdisc add"),
    (["bpftool", "struct_ops", "register", "/nonexistent/guardcheck.o"], "bpftool struct_ops register"),
])
def test_a_started_process_is_refused_a_kernel_change_in_one_line(cmd, what):
    if shutil.which(cmd[0]) is None:
        pytest.skip(f"{cmd[0]} not installed")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and what in p.stderr, p.stderr
    assert NODE + "test_a_started_process_is_refused_a_kernel_change_in_one_line" in p.stderr
    assert "fix: add @pytest.mark.kernel" in p.stderr


def test_reading_the_kernel_state_still_works_in_an_unmarked_test():
    if shutil.which("ip") is None:
        pytest.skip("ip not installed")
    assert Path(shutil.which("ip")).parent != Path("/usr/sbin")     # the stand-in is first on PATH
    p = subprocess.run(["ip", "-j", "link", "show", "lo"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and '"ifname":"lo"' in p.stdout.replace(" ", ""), p.stderr


@pytest.mark.kernel
def test_a_kernel_test_has_the_real_tools_and_functions():
    """False-failure rate: deterministic (which functions and tools the test sees). 0."""
    from mpcc.kernel import bpf
    from mpcc.testbed import netns
    assert os.environ.get("MPCC_UNMARKED_TEST") is None
    assert "mpcc-kernel-guard" not in (shutil.which("ip") or "")
    assert netns.spawn.__module__ == "mpcc.testbed.netns" and bpf._register.__module__ == "mpcc.kernel.bpf"


# --- every kernel test states its false-failure rate (issue 28) ----------------------------------
RATE = re.compile(r"false[- ]failures?", re.IGNORECASE)


def kernel_tests_without_a_rate(source: str) -> list[str]:
    """Names of the test functions of ``source`` (a test module) that are marked kernel (their own
    decorators or the module's ``pytestmark``) and whose docstring, body comments and module
    docstring never name a false-failure rate."""
    tree = ast.parse(source)
    module_kernel = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                        and "mark.kernel" in ast.unparse(n.value) for n in tree.body)
    if RATE.search(ast.get_docstring(tree) or ""):
        return []
    lines = source.splitlines()
    return [n.name for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
            and (module_kernel or any("mark.kernel" in ast.unparse(d) for d in n.decorator_list))
            and not RATE.search("\n".join(lines[n.lineno - 1:n.end_lineno]))]


def test_every_kernel_test_states_its_false_failure_rate():
    """A kernel assertion must say how often it can fail by chance (a bound judged over runs, with
    the spread it was derived from), or that it cannot (deterministic)."""
    root = Path(__file__).resolve().parent
    missing = [f"{p.relative_to(root.parent)}::{name}" for p in sorted(root.rglob("test_*.py"))
               for name in kernel_tests_without_a_rate(p.read_text())]
    assert not missing, f"kernel tests without a stated false-failure rate: {missing}"


def test_the_rate_check_finds_a_kernel_test_without_one():
    marked = "import pytest\n\n@pytest.mark.kernel\ndef test_a():\n    assert 1\n\n\ndef test_b():\n    pass\n"
    assert kernel_tests_without_a_rate(marked) == ["test_a"]
    stated = marked.replace("    assert 1", '    """False-failure rate: deterministic. 0."""\n    assert 1')
    assert kernel_tests_without_a_rate(stated) == []
    module = "import pytest\npytestmark = [pytest.mark.kernel]\n\ndef test_c():\n    # no rate here\n    pass\n"
    assert kernel_tests_without_a_rate(module) == ["test_c"]
    assert kernel_tests_without_a_rate('"""False failures: none."""\n' + module) == []
