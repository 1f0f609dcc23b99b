"""The bench/kernel scripts that read recorded testbed rows (``conn_mechanisms.py testbed``
JSON): a missing, unreadable or foreign file, and rows with nothing to judge, are one line
naming the problem and the fix, exit 2, never a traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("linux_mode_agreement.py", "loss_recovery_counters.py", "linux_cost_breakdown.py")


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("content, says", [
    (None, "No such file"),
    ("{not json", "not JSON"),
    ('{"rows": []}', "not a list of conn_mechanisms.py testbed rows"),
    ("[]", "(fix: record"),
])
def test_bad_rows_are_one_line_exit_2(tmp_path, script, content, says):
    f = tmp_path / "rows.json"
    if content is not None:
        f.write_text(content)
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "kernel" / script), str(f)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "(fix:" in lines[0], p.stderr
    assert lines[0].startswith(script.removesuffix(".py") + ": ")
