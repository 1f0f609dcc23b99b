"""Print the pinned requirements of pyproject.toml, one a line, for `make setup`:
``--build``: the build backend (maturin); default: the package's dependencies and its test extra.
The Makefile installs them into .venv/ itself, so that the Rust build starts as soon as maturin is
there, while the other dependencies download (no isolated build environment, no resolver pass)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path


def requirements(pyproject: Path, build: bool) -> list[str]:
    p = tomllib.loads(pyproject.read_text())
    if build:
        return list(p["build-system"]["requires"])
    return [*p["project"]["dependencies"], *p["project"]["optional-dependencies"]["test"]]


if __name__ == "__main__":
    print("\n".join(requirements(Path(__file__).resolve().parents[1] / "pyproject.toml", "--build" in sys.argv[1:])))
