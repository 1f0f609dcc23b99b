"""Package structure of ``python/mpcc``, read from the source (AST, nothing imported):

* engine packages never import :mod:`mpcc.reproduce` (paper code depends on engines, never the
  reverse); their command-line front ends (``cli.py``, ``*_cli.py``) may, to offer a paper's
  commands under the engine's name;
* the import graph between subpackages (and top-level modules) of ``mpcc`` has no cycle —
  again leaving out the command-line front ends, which sit on top of everything — and neither
  has the graph between modules (``sim.engine`` ↔ ``sim.parallel`` was one);
* no module imports a private name (``_x``) from another module (the compiled extension
  ``mpcc._core``, named by the build, aside).

Imports inside functions count like top-level ones. The checks run on a list of
:class:`Import` records, so each can be shown to fail on a hand-made violation."""

from __future__ import annotations

import ast

import pytest
from dataclasses import dataclass
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "python" / "mpcc"
ENGINES = ("fluid", "sim", "testbed", "hetero", "mtc", "algorithms")


@dataclass(frozen=True)
class Import:
    module: str             # importing module, e.g. "mpcc.sim.engine"
    target: str             # imported module, e.g. "mpcc.results"
    names: tuple[str, ...]  # names taken from it by "from target import names"
    line: int


def module_name(path: Path, root: Path = PKG) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports_of(path: Path, root: Path = PKG) -> list[Import]:
    mod = module_name(path, root)
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [Import(mod, a.name, (), node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".")
                base = base[:len(base) - node.level + (1 if is_pkg else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append(Import(mod, target, tuple(a.name for a in node.names), node.lineno))
    return out


def all_imports(root: Path = PKG) -> list[Import]:
    return [i for p in sorted(root.rglob("*.py")) for i in imports_of(p, root)]


def is_cli(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return last == "cli" or last.endswith("_cli")


def unit(module: str) -> str | None:
    """The subpackage or top-level module of ``mpcc`` a module belongs to."""
    parts = module.split(".")
    return parts[1] if parts[0] == "mpcc" and len(parts) > 1 else None


def engine_imports_of_reproduce(imports: list[Import]) -> list[str]:
    bad = []
    for i in imports:
        if unit(i.module) in ENGINES and not is_cli(i.module):
            targets = [i.target] + [f"{i.target}.{n}" for n in i.names]
            if any(t == "mpcc.reproduce" or t.startswith("mpcc.reproduce.") for t in targets):
                bad.append(f"{i.module}:{i.line} imports {i.target} {i.names}")
    return bad


def cycles(imports: list[Import]) -> list[list[str]]:
    """Cycles of the graph unit → unit (each cycle once, as the list of its units)."""
    graph: dict[str, set[str]] = {}
    for i in imports:
        a = unit(i.module)
        targets = [i.target] + [f"{i.target}.{n}" for n in i.names]
        for t in targets:
            b = unit(t) if t.startswith("mpcc.") else None
            if a and b and a != b and not is_cli(i.module):
                graph.setdefault(a, set()).add(b)
    found, seen = [], set()

    def dfs(node, stack):
        for nxt in sorted(graph.get(node, ())):
            if nxt in stack:
                cyc = stack[stack.index(nxt):]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    found.append(cyc + [nxt])
            elif len(stack) < 12:
                dfs(nxt, stack + [nxt])

    for start in sorted(graph):
        dfs(start, [start])
    return found


def module_cycles(imports: list[Import], modules: set[str]) -> list[list[str]]:
    """Strongly connected components (more than one module) of the module import graph; an
    import ``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``."""
    graph: dict[str, set[str]] = {}
    for i in imports:
        if is_cli(i.module):
            continue
        sub = [f"{i.target}.{n}" for n in i.names if f"{i.target}.{n}" in modules]
        for t in sub or ([i.target] if i.target in modules else []):
            if t != i.module:
                graph.setdefault(i.module, set()).add(t)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v):  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def all_modules(root: Path = PKG) -> set[str]:
    return {module_name(p, root) for p in root.rglob("*.py")}


def private_imports(imports: list[Import]) -> list[str]:
    bad = []
    for i in imports:
        if not i.target.startswith("mpcc"):
            continue
        for n in i.names:
            if n.startswith("_") and not n.startswith("__") and f"{i.target}.{n}" != "mpcc._core":
                bad.append(f"{i.module}:{i.line} imports private {n} from {i.target}")
        if any(p.startswith("_") and p != "_core" for p in i.target.split(".")[1:]):
            bad.append(f"{i.module}:{i.line} imports private module {i.target}")
    return bad


# --- the package ---------------------------------------------------------------------------------
def test_engines_do_not_import_reproduce():
    assert engine_imports_of_reproduce(all_imports()) == []


def test_no_import_cycles_between_subpackages():
    assert cycles(all_imports()) == []


def test_no_import_cycles_between_modules():
    assert module_cycles(all_imports(), all_modules()) == []


def test_no_imports_of_private_names():
    assert private_imports(all_imports()) == []


def test_every_module_is_seen():
    """The checks above cover the engines, the reproductions and their relative imports."""
    imports = all_imports()
    modules = {i.module for i in imports}
    for m in ("mpcc.sim.engine", "mpcc.fluid.solver", "mpcc.hetero.packet", "mpcc.reproduce.peng2016.sim",
              "mpcc.reproduce.tang2010.example1"):
        assert m in modules
    assert any(i.module == "mpcc.sim.parallel" and i.target == "mpcc.sim.engine" for i in imports)
    assert any(i.module == "mpcc.reproduce.peng2016.sim" and i.target == "mpcc.sim" for i in imports)


# --- the checks fail on violations ------------------------------------------------------------------
def test_checks_catch_violations():
    fake = [Import("mpcc.sim.engine", "mpcc.reproduce.peng2016", ("paper",), 1),
            Import("mpcc.hetero.model", "mpcc.reproduce", ("tang2010",), 2),
            Import("mpcc.sim.parallel", "mpcc.fluid", ("solve",), 3),
            Import("mpcc.fluid.solver", "mpcc.sim.engine", ("_columns",), 4)]
    assert len(engine_imports_of_reproduce(fake)) == 2
    assert [sorted(c[:-1]) for c in cycles(fake)] == [["fluid", "sim"]]
    assert private_imports(fake) == ["mpcc.fluid.solver:4 imports private _columns from mpcc.sim.engine"]
    # the module cycle the simulator had: engine imported a progress bar from parallel
    engine_parallel = [Import("mpcc.sim.engine", "mpcc.sim.parallel", ("_SimTimeProgress",), 1),
                       Import("mpcc.sim.parallel", "mpcc.sim.engine", ("SimRun", "run"), 2),
                       Import("mpcc.sim", "mpcc.sim", ("engine",), 3)]
    modules = {"mpcc.sim", "mpcc.sim.engine", "mpcc.sim.parallel"}
    assert module_cycles(engine_parallel, modules) == [["mpcc.sim.engine", "mpcc.sim.parallel"]]
    assert cycles(engine_parallel) == []  # within one subpackage: only the module check sees it
    # command-line front ends may import a paper's package
    assert engine_imports_of_reproduce([Import("mpcc.hetero.cli", "mpcc.reproduce.tang2010.example1",
                                               ("example1",), 1)]) == []


def test_relative_imports_resolve(tmp_path):
    pkg = tmp_path / "mpcc"
    (pkg / "sim").mkdir(parents=True)
    (pkg / "sim" / "__init__.py").write_text("from .engine import run\nfrom ..results import RunResult\n")
    (pkg / "sim" / "engine.py").write_text("def f():\n    from ..reproduce.peng2016 import paper\n")
    got = all_imports(pkg)
    assert {(i.module, i.target) for i in got} == {("mpcc.sim", "mpcc.sim.engine"), ("mpcc.sim", "mpcc.results"),
                                                   ("mpcc.sim.engine", "mpcc.reproduce.peng2016")}
    assert engine_imports_of_reproduce(got) == ["mpcc.sim.engine:2 imports mpcc.reproduce.peng2016 ('paper',)"]


ROOT = PKG.parents[1]
_SOURCES = sorted(p for d in ("python", "crates", "bpf") for p in (ROOT / d).rglob("*")
                  if p.suffix in (".py", ".rs", ".c", ".h") and not {"target", ".output"} & set(p.parts))


@pytest.mark.parametrize("path", _SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_source_files_stay_small(path):
    """No source file over about 600 lines (the project's style rule; issue #13)."""
    n = len(path.read_text().splitlines())
    assert n <= 620, f"{path.relative_to(ROOT)} has {n} lines: split it along its concerns"
