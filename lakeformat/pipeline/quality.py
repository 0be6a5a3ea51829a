"""The data-quality gate of write-audit-publish: Great Expectations on the staged rows.

Expectations come from ``config/tables.yaml`` (``quality:``), each a one-key mapping from
Great Expectations' snake-case name to its keyword arguments::

    - expect_column_values_to_not_be_null: {column: user_id}

``parse_expectations`` checks their shape and ``check_expectations`` their names, arguments and
columns against :mod:`.gx_catalogue`, both without importing Great Expectations (cheap, so the
config loader runs them when the DAG files are parsed); ``build`` makes the real objects, which
also checks argument values (``lakeformat validate-config`` does); ``audit`` runs them on an Arrow table in an ephemeral
context and returns an ``AuditReport`` whose ``summary()`` says which expectations failed, with counts
and sample values. Great Expectations is imported lazily (it takes seconds and logs a lot).
"""
from __future__ import annotations

import difflib
import logging
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional
from collections.abc import Mapping, Sequence

import pyarrow as pa

from lakeformat.errors import LakeformatError
from lakeformat.pipeline.gx_catalogue import CATALOGUE, COMMON

SAMPLES = 5   # unexpected values kept per failed expectation
_SNAKE = re.compile(r"^expect_[a-z0-9_]+$")


class QualityConfigError(LakeformatError):
    """A ``quality`` entry of the pipeline config that is not a valid expectation."""


@dataclass(frozen=True)
class Expectation:
    """One configured expectation: Great Expectations' snake-case name and its arguments."""
    name: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{self.name}({args})"


@dataclass(frozen=True)
class ExpectationOutcome:
    """What one expectation found. Counts are None where the expectation does not count rows
    (e.g. the row-count expectation, which reports ``observed`` instead)."""
    expectation: Expectation
    success: bool
    element_count: Optional[int] = None
    unexpected_count: Optional[int] = None
    observed: Any = None
    samples: tuple = ()
    error: Optional[str] = None   # the expectation could not run (e.g. a missing column)


@dataclass(frozen=True)
class AuditReport:
    """The result of auditing one batch of staged rows."""
    subject: str
    rows: int
    outcomes: tuple[ExpectationOutcome, ...]

    @property
    def success(self) -> bool:
        return all(o.success for o in self.outcomes)

    @property
    def failed(self) -> tuple[ExpectationOutcome, ...]:
        return tuple(o for o in self.outcomes if not o.success)

    def summary(self) -> str:
        """A few readable lines: the verdict, then one line per failed expectation."""
        n = len(self.outcomes)
        if self.success:
            return f"{self.subject}: all {n} expectations passed on {self.rows:,} rows"
        lines = [f"{self.subject}: {len(self.failed)} of {n} expectations failed on {self.rows:,} rows"]
        for o in self.failed:
            lines.append(f"  - {o.expectation.describe()}: {_finding(o)}")
        return "\n".join(lines)


def _finding(o: ExpectationOutcome) -> str:
    if o.error:
        return f"could not run: {o.error}"
    parts = []
    if o.unexpected_count is not None:
        total = o.element_count if o.element_count is not None else "?"
        parts.append(f"{o.unexpected_count:,} of {total:,} rows unexpected" if isinstance(total, int)
                     else f"{o.unexpected_count:,} rows unexpected")
    if o.observed is not None:
        parts.append(f"observed {o.observed!r}")
    if o.samples:
        parts.append("e.g. " + ", ".join(_show(v) for v in o.samples))
    return "; ".join(parts) or "failed"


def _show(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "null"
    return repr(value)


def parse_expectations(entries: Any, subject: str = "table") -> tuple[Expectation, ...]:
    """Check the shape of a ``quality`` list (one-key mappings of name to arguments)."""
    if entries is None:
        return ()
    if not isinstance(entries, (list, tuple)):
        raise QualityConfigError(f"quality of {subject} must be a list of expectations, "
                                 f"got {type(entries).__name__}")
    out = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            entry = {entry: {}}
        if not isinstance(entry, Mapping) or len(entry) != 1:
            raise QualityConfigError(f"quality entry {i} of {subject} must be one "
                                     f"'expect_...: {{arguments}}' mapping, got {entry!r}")
        (name, kwargs), = entry.items()
        if not isinstance(name, str) or not _SNAKE.match(name):
            raise QualityConfigError(f"quality entry {i} of {subject}: {name!r} is not an expectation "
                                     "name like 'expect_column_values_to_not_be_null'")
        if kwargs is None:
            kwargs = {}
        if not isinstance(kwargs, Mapping):
            raise QualityConfigError(f"quality entry {i} of {subject}: the arguments of {name} must be "
                                     f"a mapping, got {kwargs!r}")
        out.append(Expectation(name, dict(kwargs)))
    return tuple(out)


_COLUMN_ARGS = ("column", "column_A", "column_B")
_COLUMN_LIST_ARGS = ("column_list", "column_set")


def check_expectations(expectations: Sequence[Expectation], columns: Sequence[str], subject: str) -> None:
    """Every expectation is one Great Expectations has, with its required arguments, no unknown
    argument, and column arguments naming columns of the table."""
    for i, e in enumerate(expectations):
        at = f"quality entry {i} of {subject} ({e.name})"
        if e.name not in CATALOGUE:
            close = difflib.get_close_matches(e.name, CATALOGUE, n=1)
            raise QualityConfigError(f"{at}: Great Expectations has no such expectation"
                                     + (f" (did you mean {close[0]!r}?)" if close else ""))
        required, optional = CATALOGUE[e.name]
        if missing := [a for a in required if a not in e.kwargs]:
            raise QualityConfigError(f"{at}: missing argument(s) {', '.join(missing)}")
        known = (*required, *optional, *COMMON)
        for arg in e.kwargs:
            if arg not in known:
                close = difflib.get_close_matches(arg, known, n=1)
                raise QualityConfigError(f"{at}: unknown argument {arg!r}"
                                         + (f" (did you mean {close[0]!r}?)" if close else "")
                                         + f"; it takes {', '.join((*required, *optional))}")
        named = [e.kwargs[a] for a in _COLUMN_ARGS if a in e.kwargs]
        for a in _COLUMN_LIST_ARGS:
            named += list(e.kwargs.get(a) or ()) if isinstance(e.kwargs.get(a), (list, tuple)) else []
        for c in named:
            if c not in columns:
                raise QualityConfigError(f"{at}: the table has no column {c!r} (columns: {', '.join(columns)})")


def _quiet_gx() -> None:
    """Great Expectations logs every registration at import and draws progress bars."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    for name in ("great_expectations", "great_expectations._docs_decorators",
                 "great_expectations.expectations.registry", "great_expectations.data_context"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _gx():
    _quiet_gx()
    import great_expectations as gx  # lazy: seconds to import
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("great_expectations"):
            logging.getLogger(name).setLevel(logging.ERROR)
    return gx


def expectation_class(gx, name: str, subject: str = "table"):
    """The Great Expectations class of a snake-case expectation name, or a clear error."""
    camel = "".join(part.capitalize() for part in name.split("_"))
    cls = getattr(gx.expectations, camel, None)
    if cls is None:
        raise QualityConfigError(f"unknown expectation {name!r} in the quality of {subject} "
                                 f"(Great Expectations has no {camel})")
    return cls


def build(expectations: Sequence[Expectation], subject: str = "table") -> list:
    """Great Expectations objects for ``expectations``; a bad name or argument fails here,
    naming the entry, before any data is read."""
    gx = _gx()
    built = []
    for e in expectations:
        cls = expectation_class(gx, e.name, subject)
        try:
            built.append(cls(**e.kwargs))
        except Exception as exc:   # pydantic's ValidationError: name the entry, keep the reason
            reason = str(exc).strip().splitlines()
            raise QualityConfigError(f"invalid arguments for {e.describe()} in the quality of "
                                     f"{subject}: {' '.join(reason[:4])}") from None
    return built


def audit(rows: pa.Table, expectations: Sequence[Expectation], subject: str = "table") -> AuditReport:
    """Validate ``rows`` against ``expectations`` with a Great Expectations validation
    definition in an ephemeral context (nothing written to disk)."""
    built = build(expectations, subject)
    if not built:
        return AuditReport(subject, rows.num_rows, ())
    gx = _gx()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    batch = (ctx.data_sources.add_pandas("staged")
             .add_dataframe_asset("rows")
             .add_batch_definition_whole_dataframe("all"))
    suite = ctx.suites.add(gx.ExpectationSuite(name=f"quality-{_slug(subject)}"))
    ids = [suite.add_expectation(b).id for b in built]
    definition = ctx.validation_definitions.add(
        gx.ValidationDefinition(data=batch, suite=suite, name=f"audit-{_slug(subject)}"))
    frame = rows.to_pandas(types_mapper=None)
    result = definition.run(batch_parameters={"dataframe": frame},
                            result_format={"result_format": "SUMMARY",
                                           "partial_unexpected_count": SAMPLES})
    by_id = {r.expectation_config.id: r for r in result.results}
    outcomes = tuple(_outcome(e, by_id[i]) for e, i in zip(expectations, ids))
    return AuditReport(subject, rows.num_rows, outcomes)


def _outcome(e: Expectation, r) -> ExpectationOutcome:
    res = dict(r.result or {})
    error = _error_of(r.exception_info or {})
    samples = tuple(res.get("partial_unexpected_list") or ())[:SAMPLES]
    return ExpectationOutcome(
        expectation=e, success=bool(r.success), element_count=res.get("element_count"),
        unexpected_count=res.get("unexpected_count"), observed=res.get("observed_value"),
        samples=samples, error=error)


def _error_of(info: Mapping) -> Optional[str]:
    """The first exception message in a result's exception_info, flat or keyed by metric."""
    infos = [info] if "raised_exception" in info else [v for v in info.values() if isinstance(v, Mapping)]
    for i in infos:
        if i.get("raised_exception"):
            return (i.get("exception_message") or "raised an exception").strip().splitlines()[0]
    return None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "table"
