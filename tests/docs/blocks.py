"""The fenced code blocks of README.md and docs/**/*.md, as the docs tests run them.

A block is run unless the line before it is ``<!-- not-run: reason -->``; the tests keep the
list of such blocks (``NOT_RUN``) and fail on a marker that list does not justify.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL = ("sh", "bash", "shell")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```\s*$",
                   re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<reason>.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str          # relative to the repository root
    line: int          # 1-based line of the opening fence
    lang: str
    code: str
    not_run: str | None   # the marker's reason, or None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def first_line(self) -> str:
        return next((ln.strip() for ln in self.code.splitlines() if ln.strip()), "")


def pages() -> list[Path]:
    """README first, then the site's pages in the order of mkdocs.yml's nav (the reading order:
    later pages use what the quick start loaded)."""
    nav = re.findall(r"^\s*-\s*[^:]+:\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    listed = [ROOT / "docs" / p for p in nav]
    rest = sorted(set((ROOT / "docs").rglob("*.md")) - set(listed))
    return [ROOT / "README.md", *listed, *rest]


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        body = "\n".join(ln[len(m["indent"]):] for ln in m["body"].splitlines())
        found.append(Block(str(page.relative_to(ROOT)), text.count("\n", 0, m.start()) + 1,
                           m["lang"].lower(), body, marker["reason"] if marker else None))
    return found


def all_blocks(langs: tuple[str, ...]) -> list[Block]:
    return [b for p in pages() for b in blocks(p) if b.lang in langs]
