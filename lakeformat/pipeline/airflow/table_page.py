"""The HTML of one table's page in the Lakehouse page (``/lakehouse/table/<db.table>``), from a
TableDetail (table_view.py). Every name and value is escaped; the filter form is a plain GET
form, so the page works without script and at any mount point (links are relative)."""
from __future__ import annotations

from urllib.parse import quote

from lakeformat.format.human import human_size
from lakeformat.pipeline.airflow.history_chart import history_svg
from lakeformat.pipeline.airflow.page_shell import document, e, two_column_table
from lakeformat.pipeline.airflow.table_view import TableDetail

MAX_ROWS = 200


def table_href(identifier: str) -> str:
    """The relative link from the index page to a table's page."""
    return "table/" + quote(identifier, safe="")


def _schema(d: TableDetail) -> str:
    rows = "".join(f'<tr class="column"><td class="num">{c.id}</td><td class="name">{e(c.name)}</td>'
                   f'<td>{e(c.type)}</td><td>{"" if c.nullable else "not null"}</td><td>{e(c.role)}</td></tr>'
                   for c in d.columns)
    opts = ", ".join(f"{e(k)}={e(v)}" for k, v in sorted(d.options.items())) or "none"
    return (f'<h3>Schema <small class="muted">(schema {d.schema_id})</small></h3><table class="schema"><thead><tr>'
            '<th>id</th><th>column</th><th>type</th><th>null</th><th>key</th></tr></thead>'
            f'<tbody>{rows}</tbody></table><p class="muted">options: {opts}</p>')


def _preview(d: TableDetail) -> str:
    p = d.preview
    form = ('<form class="filter" method="get"><input name="filter" placeholder="e.g. dt = \'2024-06-01\' and '
            f'price &gt; 10" value="{e(p.filter)}"><input name="limit" type="number" min="1" max="500" '
            f'value="{p.limit}" style="width:5em"><button type="submit">Filter</button></form>')
    if p.error:
        return f'<h3>Data</h3>{form}<p class="error filter-error">{e(p.error)}</p>'
    if p.snapshot_id is None:
        return f'<h3>Data</h3>{form}<p class="muted">no rows yet (no snapshot)</p>'
    head = "".join(f"<th>{e(c)}</th>" for c in p.columns)
    body = "".join("<tr>" + "".join(f"<td>{e(v)}</td>" for v in r) + "</tr>" for r in p.rows)
    note = (f'{len(p.rows)} row(s) of snapshot {p.snapshot_id}' + (f' matching <code>{e(p.filter)}</code>' if p.filter
                                                                   else "")
            + (f"; more rows follow (limit {p.limit})" if p.more else ""))
    return (f'<h3>Data</h3>{form}<p class="muted preview-note">{note}</p><div class="scroll"><table class="preview">'
            f'<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')


def _history(d: TableDetail) -> str:
    if not d.history:
        return '<h3>Snapshot history</h3><p class="muted">no snapshots yet</p>'
    return (f'<h3>Snapshot history <small class="muted">(last {len(d.history)} snapshots: records, data files '
            f'and bytes after each, by commit kind)</small></h3>{history_svg(d.history)}')


def _partitions(d: TableDetail) -> str:
    if not d.partitions:
        return ""
    rows = "".join(f'<tr class="partition"><td class="t">{e(p.partition or "(unpartitioned)")}</td>'
                   f'<td class="num">{p.rows:,}</td><td class="num">{p.files:,}</td>'
                   f'<td class="num">{human_size(p.bytes)}</td>'
                   f'<td class="t">{e(p.last_update)}</td></tr>' for p in d.partitions[:MAX_ROWS])
    more = f'<p class="muted">and {len(d.partitions) - MAX_ROWS} more</p>' if len(d.partitions) > MAX_ROWS else ""
    return ('<h3>Partitions</h3><div class="scroll"><table><thead><tr><th>partition</th><th>records</th><th>files</th>'
            f'<th>size</th><th>last update</th></tr></thead><tbody>{rows}</tbody></table></div>{more}')


def _buckets(d: TableDetail) -> str:
    what = "sorted runs" if d.kind == "primary-key" else "files (runs)"
    head = (f'<h3>Buckets <small class="muted">({what} against the compaction trigger {e(d.trigger_option)} = '
            f'{d.trigger}; {d.buckets_at_trigger} of {len(d.buckets)} at or over it)</small></h3>')
    if not d.buckets:
        return head + '<p class="muted">no data files</p>'
    scale = max(max(b.sorted_runs for b in d.buckets), d.trigger) or 1
    mark = 100 * d.trigger / scale
    rows = "".join(
        f'<tr class="bucket"><td>{e(b.partition or "(unpartitioned)")}</td><td class="num">{b.bucket}</td>'
        f'<td class="runs num" data-runs="{b.sorted_runs}" data-due="{str(b.sorted_runs >= d.trigger).lower()}">'
        f'{b.sorted_runs}</td><td class="barcell"><div class="track"><span class="runbar'
        f'{" due" if b.sorted_runs >= d.trigger else ""}" style="width:{100 * b.sorted_runs / scale:.0f}%"></span>'
        f'<span class="trigger" style="left:{mark:.0f}%" title="trigger {d.trigger}"></span></div></td>'
        f'<td class="num">{b.files}</td><td class="num">{b.rows:,}</td><td class="num">{human_size(b.bytes)}</td></tr>'
        for b in d.buckets[:MAX_ROWS])
    more = f'<p class="muted">and {len(d.buckets) - MAX_ROWS} more</p>' if len(d.buckets) > MAX_ROWS else ""
    return (head + '<div class="scroll"><table><thead><tr><th>partition</th><th>bucket</th><th>runs</th><th></th>'
            f'<th>files</th><th>records</th><th>size</th></tr></thead><tbody>{rows}</tbody></table></div>{more}')


def _time(t) -> str:
    return t.astimezone().strftime("%Y-%m-%d %H:%M:%S") if t else ""


def _first_line(text) -> str:
    """The verdict line of an audit summary (the failed expectations are listed below it)."""
    return next(iter(str(text or "").splitlines()), "")


def _audit(r) -> str:
    a = r.audit
    if a is None:
        return '<span class="muted">not audited</span>'
    if a.get("success"):
        return f'<span class="ok">passed</span> <span class="muted">{e(a.get("summary", ""))}</span>'
    items = "".join(
        f'<li class="expectation">{e(f.get("expectation"))}: '
        + (f'error {e(f["error"])}' if f.get("error") else
           f'{e(f.get("unexpected"))} of {e(f.get("of"))} rows unexpected'
           + (f', e.g. {e(", ".join(map(str, f.get("samples") or [])))}' if f.get("samples") else ""))
        + "</li>" for f in a.get("failed") or [])
    gone = a.get("discarded_files")
    return (f'<span class="fail">failed</span> <span class="muted">{e(_first_line(a.get("summary")))}'
            + (f"; {e(gone)} staged file(s) discarded" if gone is not None else "")
            + f'</span><ul class="failed">{items}</ul>')


def _stages(d: TableDetail) -> str:
    if not d.stages:
        return ('<h3>Staged commits</h3><p class="muted">no staged commits (write-audit-publish stages appear here '
                'with their audits)</p>')
    rows = "".join(
        f'<tr class="stage" data-stage="{e(r.stage_id)}" data-state="{e(r.state)}" '
        f'data-audit="{"none" if r.audit_passed is None else "passed" if r.audit_passed else "failed"}">'
        f'<td>{e(r.stage_id)}</td><td>{e(r.state)}'
        + (f" as snapshot {r.snapshot_id}" if r.snapshot_id is not None else "")
        + f'</td><td class="t">{_time(r.publish_time or r.create_time or r.audit_time)}</td>'
        f'<td class="num">{"" if r.rows is None else f"{r.rows:,}"}</td><td>{_audit(r)}</td></tr>'
        for r in d.stages[:MAX_ROWS])
    return ('<h3>Staged commits and audits</h3><table class="stages"><thead><tr><th>stage</th><th>state</th>'
            f'<th>when</th><th>rows</th><th>audit</th></tr></thead><tbody>{rows}</tbody></table>')


def render_table_page(warehouse: str, d: TableDetail) -> str:
    title = e(d.name) + (f" <small>{e(d.identifier)}</small>" if d.name != d.identifier else "")
    header = (f'<h1>{title}</h1><p><a href="../">← all tables</a> · {e(d.kind)} table · warehouse '
              f'{e(warehouse)} · <a href="../api/tables/{quote(d.identifier, safe="")}">JSON</a></p>')
    body = (f'<section class="card" data-identifier="{e(d.identifier)}">{_schema(d)}</section>'
            f'<section class="card">{_preview(d)}</section>'
            f'<section class="card">{_history(d)}</section>'
            f'<section class="card"><div class="grid"><div>{_partitions(d)}'
            + two_column_table("Consumers", ("consumer", "next snapshot"), list(d.consumers.items()), "no consumers",
                               "consumer")
            + two_column_table("Tags", ("tag", "snapshot"), [(t.name, t.snapshot_id) for t in d.tags], "no tags", "tag")
            + f'</div><div>{_buckets(d)}</div></div></section>'
            f'<section class="card">{_stages(d)}</section>')
    return document(f"{d.identifier} · Lakehouse", header, body)
