"""JSON in and out of bodies without losing what orjson cannot hold.

orjson reads an integer beyond 64 bits as a float (``123456789012345678901234567890`` becomes
``1.2345678901234568e+29``) and refuses to write one. A body that holds such a number is read
and written with the standard library instead, so a rewritten body keeps it exact. Everything
else goes through orjson (``orjson`` docs, "Numbers").
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_BIG_INT = re.compile(rb"\d{19,}")


def loads(raw: bytes) -> Any:
    """Parse ``raw``; raises ``ValueError`` (``orjson.JSONDecodeError`` or
    ``json.JSONDecodeError``) when it is not JSON."""
    if _BIG_INT.search(raw):
        return json.loads(raw)
    return orjson.loads(raw)


def dumps(value: Any) -> bytes:
    """Compact JSON bytes (UTF-8, no spaces); integers of any size kept exact."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
