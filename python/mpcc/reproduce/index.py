"""``REPORT.md`` for reproductions whose runners write figures into one directory
(``mpcc reproduce tang2010``, ``jiang2011``): every PNG of the directory, in name order (fig3 before fig10), under
a heading, with the Markdown/JSON summaries listed — the file to open first."""

from __future__ import annotations

import re
from pathlib import Path


def _natural(p: Path) -> list:
    """fig3 before fig10."""
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", p.stem)]


def write_index(out_dir: str | Path, title: str, intro: str, captions: dict[str, str] | None = None) -> Path:
    """Write ``out_dir/REPORT.md`` embedding every ``*.png`` in ``out_dir`` (``captions``:
    ``{file stem: text}``, shown under the image when given). Returns its path."""
    out = Path(out_dir)
    captions = captions or {}
    lines = [f"# {title}", "", intro, ""]
    pngs = sorted(out.glob("*.png"), key=_natural)
    if not pngs:
        lines += ["No figures were written (see the command's output).", ""]
    for p in pngs:
        lines += [f"## {p.stem}", "", f"![{p.stem}]({p.name})", ""]
        if p.stem in captions:
            lines += [captions[p.stem], ""]
    others = sorted(x.name for x in out.iterdir() if x.suffix in (".md", ".json", ".csv") and x.name != "REPORT.md")
    if others:
        lines += ["## Other files", ""] + [f"- [`{n}`]({n})" for n in others] + [""]
    path = out / "REPORT.md"
    path.write_text("\n".join(lines))
    return path
