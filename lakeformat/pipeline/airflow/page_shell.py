"""The Lakehouse page's HTML shell: its stylesheet and the document around a page's body
(pages are HTML built on the server, every value escaped with ``e``)."""
from __future__ import annotations

import html


def e(x) -> str:
    """``x`` as HTML text or attribute value (quotes escaped too)."""
    return html.escape(str(x))


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f4f6f9;color:#1d2433}
header{background:#1d2433;color:#fff;padding:14px 24px}header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#b9c2d3;font-size:13px}main{padding:16px 24px}
.card{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.12);padding:14px 18px;margin-bottom:16px}
h2{margin:0 0 6px;font-size:18px}h2 small{color:#6b778c;font-weight:normal;font-size:13px}
h3{font-size:14px;margin:12px 0 6px;color:#42526e}.facts{margin:0;color:#42526e;font-size:13px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,480px),1fr));gap:24px}.grid>div{min-width:0}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:3px 8px;border-bottom:1px solid #e6e9ef;text-align:left}
th{color:#6b778c;font-weight:600;white-space:nowrap}.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.bar{display:flex;height:14px;border-radius:7px;overflow:hidden;background:#e6e9ef}.seg{display:block;height:100%}
.legend{font-size:12px;margin-top:6px}.kind{margin-right:12px}.kind i{display:inline-block;width:10px;height:10px;
border-radius:2px;margin-right:4px;vertical-align:-1px}.runbar{display:inline-block;height:10px;background:#f2994a;
border-radius:3px;min-width:2px}.pill{color:#fff;border-radius:9px;padding:0 7px;font-size:11px}
.muted{color:#6b778c;font-size:13px}.barcell{width:30%}td.t{white-space:nowrap}.error{color:#c0392b}
header a,h2 a{color:inherit}.scroll{overflow-x:auto;max-height:480px;overflow-y:auto}
.preview td{white-space:pre;max-width:420px;overflow:hidden;text-overflow:ellipsis;font-family:ui-monospace,monospace}
form.filter{display:flex;gap:8px;margin:6px 0}form.filter input[name=filter]{flex:1;font-family:ui-monospace,monospace;
padding:4px 6px}svg.history text{font-size:11px;fill:#6b778c}.runbar.due{background:#eb5757}
.track{position:relative;height:12px}.trigger{position:absolute;top:-1px;width:2px;height:14px;background:#1d2433}
.ok{color:#27ae60;font-weight:600}.fail{color:#c0392b;font-weight:600}ul.failed{margin:2px 0 2px 16px;padding:0}
"""


def two_column_table(title: str, head: tuple[str, str], rows: list[tuple], empty: str, cls: str) -> str:
    """A titled name/value table (consumers, tags), or ``empty`` when there are no rows."""
    if not rows:
        return f'<h3>{title}</h3><p class="muted">{empty}</p>'
    body = "".join(f'<tr class="{cls}"><td>{e(a)}</td><td class="num">{e(b)}</td></tr>' for a, b in rows)
    return (f'<h3>{title}</h3><table><thead><tr><th>{head[0]}</th><th>{head[1]}</th></tr></thead>'
            f'<tbody>{body}</tbody></table>')


def document(title: str, header: str, body: str) -> str:
    """A whole page: ``header`` and ``body`` are HTML already escaped by the caller."""
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>{e(title)}</title>'
            f'<style>{CSS}</style></head><body><header>{header}</header><main>{body}</main></body></html>')
