"""Deterministic tool-call ids for answers whose calls carry none (or a duplicate).

Same inputs, same id: a replay of the same flow gives the client the same ids, as the tool-call
router of seed 004 does with ``generate_tool_call_id(plan_id, sequence)`` → ``tc_<24 hex>``.
"""

from __future__ import annotations

import hashlib


def stable_call_id(flow_key: str, position: int) -> str:
    """``tc_`` + 24 hex chars of SHA-256 over ``"<flow_key>:<position>"``.

    ``flow_key`` identifies the flow (mitmproxy's ``flow.id``, kept in saved flows);
    ``position`` is the call's 0-based position in the answer. 27 characters: well under the
    64-character cap OpenAI puts on ``call_id`` (wire-formats §5).
    """
    digest = hashlib.sha256(f"{flow_key}:{position}".encode()).hexdigest()
    return "tc_" + digest[:24]
