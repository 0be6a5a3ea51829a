"""The snapshot history as an inline SVG drawn on the server (no script, no CDN): three panels,
records, data files and bytes after each snapshot, one bar per snapshot coloured by its commit
kind, with a tooltip per bar. A pure function of the history points."""
from __future__ import annotations

import html
from collections.abc import Sequence

from lakeformat.format.human import human_size

KIND_COLORS = {"APPEND": "#2f80ed", "COMPACT": "#27ae60", "OVERWRITE": "#eb5757", "ANALYZE": "#9b51e0"}
OTHER_COLOR = "#888888"
WIDTH, PANEL, GAP, LEFT, TOP = 760, 70, 26, 78, 8
PANELS = (("rows", "records", lambda n: f"{n:,}"), ("files", "data files", lambda n: f"{n:,}"),
          ("bytes", "size", human_size))


def kind_color(kind: str) -> str:
    return KIND_COLORS.get(kind, OTHER_COLOR)


def _e(x) -> str:
    return html.escape(str(x))


def history_svg(points: Sequence) -> str:
    """``points``: HistoryPoint-like (id, kind, time, rows, files, bytes), oldest first."""
    if not points:
        return '<p class="muted">no snapshots yet</p>'
    n = len(points)
    plot_w = WIDTH - LEFT - 10
    step = plot_w / n
    bar_w = max(1.0, step * 0.8)
    height = TOP + len(PANELS) * (PANEL + GAP) + 14
    parts = [f'<svg class="history" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
             f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="snapshot history">']
    for i, (attr, label, fmt) in enumerate(PANELS):
        y0 = TOP + i * (PANEL + GAP)
        top = max(getattr(p, attr) for p in points) or 1
        parts.append(f'<text class="axis" x="{LEFT - 6}" y="{y0 + 10}" text-anchor="end">{_e(fmt(top))}</text>'
                     f'<text class="axis" x="{LEFT - 6}" y="{y0 + PANEL}" text-anchor="end">0</text>'
                     f'<text class="label" x="{LEFT}" y="{y0 + PANEL + 14}">{_e(label)}</text>'
                     f'<line x1="{LEFT}" y1="{y0 + PANEL}" x2="{WIDTH - 10}" y2="{y0 + PANEL}" stroke="#c1c7d0"/>')
        for j, p in enumerate(points):
            v = max(getattr(p, attr), 0)
            h = PANEL * v / top
            x = LEFT + j * step + (step - bar_w) / 2
            tip = (f"snapshot {p.id} {p.kind} {p.time}: {p.rows:,} records, {p.files:,} files, "
                   f"{human_size(p.bytes)}")
            parts.append(f'<rect class="hbar" data-panel="{attr}" data-snapshot="{p.id}" data-kind="{_e(p.kind)}" '
                         f'data-value="{v}" x="{x:.1f}" y="{y0 + PANEL - h:.1f}" width="{bar_w:.1f}" '
                         f'height="{max(h, 0.5):.1f}" fill="{kind_color(p.kind)}"><title>{_e(tip)}</title></rect>')
    last_y = TOP + len(PANELS) * (PANEL + GAP) + 4
    parts.append(f'<text class="axis" x="{LEFT}" y="{last_y}">snapshot {points[0].id}</text>'
                 f'<text class="axis" x="{WIDTH - 10}" y="{last_y}" text-anchor="end">snapshot {points[-1].id}</text>')
    parts.append("</svg>")
    kinds = list(dict.fromkeys(p.kind for p in points))
    legend = "".join(f'<span class="kind"><i style="background:{kind_color(k)}"></i>{_e(k)}</span>' for k in kinds)
    return "".join(parts) + f'<div class="legend">{legend}</div>'
