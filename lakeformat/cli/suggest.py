""""Did you mean ...?" for a misspelt verb or table: the closest known names by
``difflib``'s similarity, so ``lakeformat snapshot db.evnts`` points at what exists instead of
only saying what does not."""
from __future__ import annotations

import argparse
import difflib
import re
from typing import Optional
from collections.abc import Iterable

_INVALID_CHOICE = re.compile(r"argument command: invalid choice: '([^']*)'")


def closest(word: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names most like ``word``, best first (case ignored); none when nothing is close."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    return [by_lower[m] for m in difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)]


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'a' or 'b'?)``, or the empty string."""
    matches = closest(word, known)
    if not matches:
        return ""
    return f" (did you mean {' or '.join(repr(m) for m in matches)}?)"


def table_hint(cat, identifier: str) -> str:
    """The closest existing tables to ``identifier`` (all databases), else the closest database
    when its database part names none. Empty when the table does exist (the error was about
    something else) or nothing is close."""
    if cat.table_exists(identifier):
        return ""
    databases = cat.list_databases()
    hint = did_you_mean(identifier, [f"{d}.{t}" for d in databases for t in cat.list_tables(d)])
    db = identifier.rpartition(".")[0]
    if not hint and db and db not in databases:
        hint = did_you_mean(db, databases).replace("did you mean", "no database of that name; did you mean")
    return hint


class SuggestingParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose "invalid choice" error for the verb names the closest verbs."""

    def error(self, message: str):   # argparse's hook for usage errors; exits with status 2
        m = _INVALID_CHOICE.search(message)
        verbs = self._verbs()
        if m and verbs:
            hint = did_you_mean(m.group(1), verbs)
            if hint:
                message = f"unknown verb {m.group(1)!r}{hint}; 'lakeformat --help' lists every verb"
        super().error(message)

    def _verbs(self) -> Optional[list[str]]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return list(action.choices)
        return None
