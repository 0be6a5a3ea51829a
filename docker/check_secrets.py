"""Refuses to start the stack on placeholder or invalid secrets (docker-compose's `check-secrets`
service, which every other service waits for). Standard library only.

    python docker/check_secrets.py      # reads the variables below from the environment

Exit 0 when every secret is set, is not a placeholder (``change-me``...) and has the right
shape (a Fernet key is 32 url-safe base64 bytes; signing keys at least 32 characters); else
exit 1 naming each problem, never a value.
"""
from __future__ import annotations

import base64
import binascii
import os
import sys

PASSWORDS = ("AIRFLOW_ADMIN_PASSWORD", "POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD")
SIGNING_KEYS = ("AIRFLOW_JWT_SECRET", "AIRFLOW_API_SECRET_KEY")
FERNET = "AIRFLOW_FERNET_KEY"
PLACEHOLDERS = ("change-me", "changeme", "change_me", "placeholder", "password", "secret", "admin", "minioadmin")
MIN_SIGNING_KEY = 32
MIN_PASSWORD = 8


def problems(env) -> list[str]:
    out = []
    for name in (*PASSWORDS, *SIGNING_KEYS, FERNET):
        value = env.get(name, "")
        if not value:
            out.append(f"{name} is not set")
        elif any(p in value.lower() for p in PLACEHOLDERS[:4]) or value.lower() in PLACEHOLDERS:
            out.append(f"{name} is still a placeholder: replace it in .env")
        elif name in PASSWORDS and len(value) < MIN_PASSWORD:
            out.append(f"{name} is shorter than {MIN_PASSWORD} characters")
        elif name in SIGNING_KEYS and len(value) < MIN_SIGNING_KEY:
            out.append(f"{name} is shorter than {MIN_SIGNING_KEY} characters: "
                       "python -c 'import secrets; print(secrets.token_urlsafe(48))'")
    key = env.get(FERNET, "")
    if key and not any(FERNET in p for p in out):
        try:
            valid = len(base64.urlsafe_b64decode(key.encode())) == 32
        except (binascii.Error, ValueError):
            valid = False
        if not valid:
            out.append(f"{FERNET} is not a Fernet key (32 url-safe base64-encoded bytes): python -c "
                       "'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'")
    return out


def main() -> int:
    found = problems(os.environ)
    for p in found:
        print(f"refusing to start: {p}", file=sys.stderr)
    if not found:
        print("secrets look real: starting")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
