"""The official SDK clients pointed at a proxy, and the checks every integration file makes of a
mitmdump run: one place for what ``tests/integration/`` used to set up file by file.

Clients: :func:`anthropic_client`, :func:`openai_client` and :func:`genai_client` build the
``anthropic``, ``openai`` and ``google-genai`` clients that send to ``url`` (a mitmdump in reverse
mode, or mitmweb's proxy port), with test keys, no retries (a retry would hide a broken answer
and add a flow) and a 30 s timeout. Checks: :func:`parse_sse`, :func:`reply_bytes`,
:func:`assert_no_addon_errors`, :func:`record_of`, :func:`decisions_named`,
:func:`assert_changed_flow`, :func:`one_request`.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import anthropic
import httpx
import openai
from google import genai
from google.genai import types

import procs

#: Every key of the record the addon keeps in ``flow.metadata["toolvocab"]``, and of one decision.
RECORD_KEYS = ("dialect", "mode", "declared", "rename_map", "prompt_sentence", "decisions", "skipped")
DECISION_KEYS = ("name", "target", "action", "step", "reason")
ACTIONS = ("keep", "rename", "fit", "leave")


def anthropic_client(url: str) -> anthropic.Anthropic:
    """The ``anthropic`` client sending Messages requests to ``url`` (``url + "/v1/messages"``)."""
    return anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0, timeout=30)


def openai_client(url: str) -> openai.OpenAI:
    """The ``openai`` client sending Chat Completions / Responses requests to ``url + "/v1"``."""
    return openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=30)


def genai_client(url: str) -> genai.Client:
    """The ``google-genai`` client sending Gemini API (``v1beta``) requests to ``url``; its
    ``HttpOptions.timeout`` is in milliseconds."""
    return genai.Client(
        api_key="x-test-key", http_options=types.HttpOptions(base_url=url, api_version="v1beta", timeout=30_000)
    )


def parse_sse(data: bytes) -> list[tuple[str | None, str]]:
    """SSE bytes -> [(event name, data)] (joins multi-line data, skips comments)."""
    out = []
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    for raw_event in text.split("\n\n"):
        name, datas = None, []
        for line in raw_event.split("\n"):
            if not line or line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                datas.append(value)
        if name is not None or datas:
            out.append((name, "\n".join(datas)))
    return out


def reply_bytes(record: dict) -> bytes:
    """The body the fake upstream answered with, from one entry of its request log."""
    return base64.b64decode(record["reply"]["body_b64"])


def assert_no_addon_errors(px: procs.MitmdumpHandle) -> None:
    """Stop mitmdump and check its log for addon failures.

    (mitmproxy itself may print asyncio CancelledError tracebacks while shutting down with
    open keep-alive connections; those are not the addon's.)
    """
    px.stop()
    out = px.output()
    addon_frame = f'File "{procs.REPO / "toolvocab"}'
    for marker in ("Addon error", "mitmproxy has crashed", addon_frame):
        assert marker not in out, f"{marker!r} in mitmdump output:\n{out}"


def record_of(flow: Any, dialect: str) -> dict:
    """The addon's record of ``flow`` (read back from the ``-w`` file), checked for its shape:
    every key, the ``dialect`` expected, the types of the declared list, rename map and prompt
    sentence, and every decision with its keys and a known action."""
    md = flow.metadata.get("toolvocab")
    assert isinstance(md, dict), f"flow {flow.request.path} has no toolvocab metadata: {flow.metadata}"
    for key in RECORD_KEYS:
        assert key in md, f"toolvocab metadata lacks {key!r}: {md}"
    assert md["dialect"] == dialect, md
    assert isinstance(md["declared"], list)
    assert isinstance(md["rename_map"], dict)
    assert md["prompt_sentence"] is None or isinstance(md["prompt_sentence"], str)
    assert isinstance(md["decisions"], list)
    for d in md["decisions"]:
        for key in DECISION_KEYS:
            assert key in d, f"decision lacks {key!r}: {d}"
        assert d["action"] in ACTIONS, d
    return md


def decisions_named(md: dict, name: str) -> list[dict]:
    """The decisions of a record about calls named ``name`` (the name the upstream sent)."""
    return [d for d in md["decisions"] if d["name"] == name]


def assert_changed_flow(flow: Any) -> None:
    """A flow the addon changed is marked and carries a one-line comment."""
    assert flow.marked, "a changed flow must be marked"
    assert flow.comment and "\n" not in flow.comment.strip(), repr(flow.comment)


def one_request(fake: Any, before: int) -> dict:
    """The fake upstream's log entry for the one request after the ``before`` it had logged."""
    return fake.wait_requests(before + 1)[before]


def post_streaming(url: str, path: str, body: bytes, headers: dict[str, str]) -> list[tuple[float, bytes]]:
    """POST ``body`` to ``url`` + ``path`` and read the answer's bytes as they come (``iter_raw``:
    as sent, still encoded): ``(time.time(), every byte so far)`` after each piece, for a test of
    what arrived when. Asserts a 200; bounded by a 30 s timeout."""
    seen: list[tuple[float, bytes]] = []
    with httpx.Client(base_url=url, timeout=30, trust_env=False) as http:
        with http.stream("POST", path, content=body, headers=headers) as r:
            assert r.status_code == 200
            buf = b""
            for piece in r.iter_raw():
                buf += piece
                seen.append((time.time(), buf))
    return seen
