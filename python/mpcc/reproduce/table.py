"""Side-by-side comparison records: paper | fluid | sim | kernel.

A reproduction is a list of :class:`Row` (one measured quantity, e.g. Table III, multipath
throughput, Balia) holding one :class:`Cell` per source. Engines that fail leave an error on
their column instead of cells; everything already computed is kept and written out.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

SOURCES = ("paper", "model", "fluid", "sim", "testbed")  # "model": closed forms / window model (Jiang)


@dataclass
class Cell:
    value: float | None
    ci95: float | None = None
    note: str = ""

    def text(self, digits: int = 3) -> str:
        if self.value is None or (isinstance(self.value, float) and math.isnan(self.value)):
            return self.note or "—"
        s = f"{self.value:.{digits}g}"
        if self.ci95 is not None:
            s += f" ± {self.ci95:.1g}"
        return s


@dataclass
class Row:
    table: str      # e.g. "Table III"
    quantity: str   # e.g. "MP-TCP throughput (Mb/s)"
    algorithm: str
    cells: dict[str, Cell] = field(default_factory=dict)


@dataclass
class Reproduction:
    paper: str
    rows: list[Row] = field(default_factory=list)
    columns: dict[str, dict] = field(default_factory=dict)  # source -> {"runs":…, "error":…, "notes":…, "setup":…}
    traces: dict[str, dict] = field(default_factory=dict)   # source -> {figure: {algorithm: trace}} (not in JSON)

    def row(self, table: str, quantity: str, algorithm: str) -> Row:
        for r in self.rows:
            if (r.table, r.quantity, r.algorithm) == (table, quantity, algorithm):
                return r
        r = Row(table, quantity, algorithm)
        self.rows.append(r)
        return r

    def put(self, source: str, table: str, quantity: str, algorithm: str, cell: Cell) -> None:
        self.row(table, quantity, algorithm).cells[source] = cell

    # --- rendering ------------------------------------------------------------------------
    def sources(self) -> list[str]:
        present = {s for r in self.rows for s in r.cells} | set(self.columns)
        return [s for s in SOURCES if s in present]

    def shortened(self, source: str, table: str) -> bool:
        """True when ``source`` ran ``table`` shorter than the paper (its cells carry a †)."""
        return table in self.columns.get(source, {}).get("shortened", ())

    def cell_text(self, r: Row, source: str) -> str:
        if source not in r.cells:
            return "unavailable" if self.columns.get(source, {}).get("error") else "—"
        return r.cells[source].text() + (" †" if self.shortened(source, r.table) else "")

    def setup_line(self, table: str) -> str:
        """``sim: 5 runs × 100 s; kernel: …`` for the table (empty when nothing recorded)."""
        parts = [f"{'kernel' if s == 'testbed' else s}: {self.columns[s]['setup'][table]}"
                 for s in self.sources() if table in self.columns.get(s, {}).get("setup", {})]
        return "; ".join(parts)

    def rich_tables(self) -> list[Table]:
        from rich.table import Table

        out = []
        srcs = self.sources()
        for (table, quantity) in dict.fromkeys((r.table, r.quantity) for r in self.rows):
            t = Table(title=f"{self.paper} — {table}: {quantity}", caption=self.setup_line(table) or None)
            t.add_column("algorithm")
            for s in srcs:
                t.add_column("kernel" if s == "testbed" else s, justify="right")
            for r in self.rows:
                if (r.table, r.quantity) != (table, quantity):
                    continue
                t.add_row(r.algorithm, *(self.cell_text(r, s) for s in srcs))
            out.append(t)
        return out

    def print(self, console: Console | None = None) -> None:
        if console is None:
            from rich.console import Console
            console = Console()
        for t in self.rich_tables():
            console.print(t)
        for s, meta in self.columns.items():
            if meta.get("error"):
                console.print(f"[yellow]{s}: unavailable — {meta['error']}[/yellow]")
            elif meta.get("notes"):
                console.print(f"{s}: {meta['notes']}")

    def to_dict(self) -> dict:
        return {"paper": self.paper, "columns": self.columns,
                "rows": [{"table": r.table, "quantity": r.quantity, "algorithm": r.algorithm,
                          "cells": {k: asdict(v) for k, v in r.cells.items()}} for r in self.rows]}

    @classmethod
    def from_dict(cls, d: dict) -> "Reproduction":
        """The inverse of :meth:`to_dict` (e.g. a saved results.json)."""
        rep = cls(d["paper"], columns=dict(d.get("columns", {})))
        for r in d.get("rows", []):
            for source, c in r["cells"].items():
                rep.put(source, r["table"], r["quantity"], r["algorithm"], Cell(**c))
        return rep

    def to_json(self, indent: int | None = 2) -> str:
        """JSON of :meth:`to_dict` (NaN and infinities as null)."""
        return json.dumps(_clean(self.to_dict()), indent=indent)

    def health_lines(self, table: str) -> list[str]:
        """One line per kernel cell of ``table`` from ``columns["testbed"]["health"][table]``
        ({algorithm: mpcc.testbed.health.aggregate record}); nothing when there is none."""
        from ..testbed.health import line
        cells = self.columns.get("testbed", {}).get("health", {}).get(table)
        if not cells:
            return []
        out = ["Kernel health per cell (what could have touched its numbers; docs/testbed.md):", ""]
        out += [f"- {a}: {line(h) if h else 'health: not measured (the cell failed)'}" for a, h in cells.items()]
        return out + [""]

    def markdown(self) -> str:
        srcs = self.sources()
        lines = [f"# {self.paper} reproduction", ""]
        pairs = list(dict.fromkeys((r.table, r.quantity) for r in self.rows))
        last = {t: q for t, q in pairs}
        for (table, quantity) in pairs:
            lines += [f"## {table}: {quantity}", "",
                      "| algorithm | " + " | ".join("kernel" if s == "testbed" else s for s in srcs) + " |",
                      "|---" * (len(srcs) + 1) + "|"]
            for r in self.rows:
                if (r.table, r.quantity) == (table, quantity):
                    lines.append(f"| {r.algorithm} | " + " | ".join(self.cell_text(r, s) for s in srcs) + " |")
            lines.append("")
            if self.setup_line(table):
                lines += [f"Runs — {self.setup_line(table)}. † = shorter than the paper's experiment.", ""]
            if last[table] == quantity:
                lines += self.health_lines(table)
        for s, meta in self.columns.items():
            lines.append(f"- **{s}**: " + (f"unavailable — {meta['error']}" if meta.get("error") else meta.get("notes", "")))
        return "\n".join(lines) + "\n"

    def save(self, out: Path) -> None:
        """Write JSON and Markdown atomically (called after every column, so nothing computed
        is lost if a later engine fails)."""
        out.mkdir(parents=True, exist_ok=True)
        for name, text in (("results.json", self.to_json()),
                           ("results.md", self.markdown())):
            tmp = out / (name + ".tmp")
            tmp.write_text(text)
            tmp.replace(out / name)


def _clean(o):
    if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o
