"""The one place credentials are masked: in messages, reprs, log lines and shown options.

A secret can reach text three ways, and ``mask`` covers each: as the value of an option whose key
names a secret (``s3.secret-key``, ``password``, ``AWS_SECRET_ACCESS_KEY``), as the password of a
URI (``postgresql://user:pw@host/db``), or verbatim anywhere once its owner registered it with
``register`` (a catalog registers its secret options, so a driver error that echoes one is masked
too). Everything lakeformat shows to a person goes through here: error pages, logs, reprs.
"""
from __future__ import annotations

import logging
import re
import threading
from typing import Any
from collections.abc import Mapping

MASK = "***"
MIN_REGISTERED_LENGTH = 4   # shorter registered values would mask ordinary words
_SECRET_WORDS = ("password", "passwd", "secret", "token", "access-key", "access_key", "accesskey",
                 "credential", "private-key", "private_key", "api-key", "api_key", "apikey")
_SECRET_KEY = re.compile("|".join(map(re.escape, _SECRET_WORDS)), re.I)
# user:password@ in any scheme://
_URI_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"]*:)(?P<pw>[^\s@/'\"]*)(?=@)")
# key=value, key: value, 'key': 'value', "key"="value" where the key names a secret
_KEY_VALUE = re.compile(
    r"(?P<head>(?P<q>['\"]?)(?P<key>[A-Za-z0-9_.\-]*(?:" + "|".join(map(re.escape, _SECRET_WORDS)) +
    r")[A-Za-z0-9_.\-]*)(?P=q)\s*[=:]\s*)(?P<vq>['\"])?(?P<value>(?(vq)[^'\"]*|[^\s,;&)}\]'\"]*))", re.I)
_registered: set[str] = set()
_lock = threading.Lock()


def is_secret_key(key: str) -> bool:
    """Whether an option or variable named ``key`` holds a credential."""
    return bool(_SECRET_KEY.search(str(key)))


def register(*values: Any) -> None:
    """Remember secret values so that ``mask`` hides them wherever they appear later."""
    with _lock:
        _registered.update(str(v) for v in values if v is not None and len(str(v)) >= MIN_REGISTERED_LENGTH)


def register_options(options: Mapping[str, Any]) -> None:
    """Register the secrets among ``options``: values of secret keys and URI passwords."""
    for k, v in options.items():
        if v is None:
            continue
        if is_secret_key(k):
            register(v)
        for m in _URI_PASSWORD.finditer(str(v)):
            register(m.group("pw"))


def mask(text: Any) -> str:
    """``text`` with every credential replaced by ``***``."""
    s = str(text)
    with _lock:
        known = sorted(_registered, key=len, reverse=True)
    for value in known:
        s = s.replace(value, MASK)
    s = _URI_PASSWORD.sub(lambda m: m.group("head") + (MASK if m.group("pw") else ""), s)
    return _KEY_VALUE.sub(lambda m: m.group("head") + (m.group("vq") or "") + (MASK if m.group("value") else ""), s)


def mask_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``options`` fit to show: secret keys' values and URI passwords masked."""
    return {k: (MASK if is_secret_key(k) and v not in (None, "") else
                mask(v) if isinstance(v, str) else v) for k, v in options.items()}


class MaskingFilter(logging.Filter):
    """A logging filter that masks credentials in every record it passes (message and args)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.msg, record.args = mask(record.getMessage()), None
        else:
            record.msg = mask(record.msg)
        return True
