"""`make setup` installs the Python side from scripts/requirements.py (no resolver pass over the
package): every requirement pyproject.toml names must come out of it, pinned exactly."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("requirements", ROOT / "scripts" / "requirements.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_setup_installs_every_pinned_requirement_of_pyproject():
    req = _load().requirements(ROOT / "pyproject.toml", build=False)
    build = _load().requirements(ROOT / "pyproject.toml", build=True)
    names = {re.split(r"[\[=<>!~ ]", r, maxsplit=1)[0].lower() for r in req}
    # the runtime dependencies the code imports and the test runner (read off the source, not pyproject)
    assert {"numpy", "scipy", "matplotlib", "pyarrow", "click", "rich", "dask", "pytest", "hypothesis"} <= names
    assert [r for r in build if r.startswith("maturin")]
    for r in [*req, *build]:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+(\[[a-z,]+\])?==[0-9][0-9A-Za-z.]*", r), f"{r}: not pinned exactly"
