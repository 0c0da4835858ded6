"""OpenAI Chat Completions answers (``POST [/prefix]/chat/completions``): JSON, or SSE ``data:``
chunks ending with ``data: [DONE]``."""

from __future__ import annotations

import time
from typing import Any

from fakeup.policy import args_text
from fakeup.policy import decide
from fakeup.policy import summary_of
from fakeup.policy import text_of
from fakeup.policy import want_stream
from fakeup.wire import Reply
from fakeup.wire import Request
from fakeup.wire import json_reply
from fakeup.wire import long_name_error
from fakeup.wire import new_id
from fakeup.wire import openai_bad_body
from fakeup.wire import openai_sse_reply
from fakeup.wire import split_evenly


def _chat_tool_names(body: dict) -> list[tuple[str, str]]:
    """``[(param path, name)]`` of every declared tool (function, custom, legacy functions)."""
    out = []
    for i, t in enumerate(body.get("tools") or []):
        if not isinstance(t, dict):
            continue
        kind = t.get("type") or "function"
        slot = t.get(kind) if isinstance(t.get(kind), dict) else {}
        if isinstance(slot.get("name"), str):
            out.append((f"tools[{i}].{kind}.name", slot["name"]))
    for i, f in enumerate(body.get("functions") or []):
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            out.append((f"functions[{i}].name", f["name"]))
    return out


def chat_plan(body: dict, cfg: dict) -> dict:
    tools = [n for _, n in _chat_tool_names(body)]
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    pending = bool(messages) and messages[-1].get("role") in ("tool", "function")
    results = [m for m in messages if m.get("role") in ("tool", "function")]
    last = text_of(results[-1].get("content")) if results else None
    fmt = body.get("response_format") if isinstance(body.get("response_format"), dict) else {}
    schema = None
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema") or {}
    return decide(cfg, tools, pending, last, schema, wants_json=fmt.get("type") == "json_object")


def openai_chat_completions(req: Request, cfg: dict) -> Reply:
    body = req.json
    if not isinstance(body, dict):
        return openai_bad_body()
    if cfg.get("reject_long_names"):
        err = long_name_error(_chat_tool_names(body))
        if err is not None:
            return err
    plan = chat_plan(body, cfg)
    stream = want_stream(cfg, body)
    model = body.get("model") or "gpt-fake"
    cid, created = new_id("chatcmpl-"), int(time.time())
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    call = None
    if plan["kind"] == "tool":
        call = {
            "id": new_id("call_"),
            "type": "function",
            "function": {"name": plan["name"], "arguments": args_text(plan["args"])},
        }
    finish = "tool_calls" if call else "stop"
    summary = summary_of(plan, "sse" if stream else "json")
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": None if call else plan["text"], "refusal": None}
        if call:
            message["tool_calls"] = [call]
        return json_reply(
            200,
            {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                "usage": usage,
                "system_fingerprint": "fp_fake",
            },
            summary=summary,
            extra_headers=[("x-request-id", new_id("req_"))],
        )

    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict, finish_reason: str | None = None) -> tuple[None, dict]:
        c: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if with_usage:
            c["usage"] = None
        return (None, c)

    ev: list[tuple[str | None, Any]] = []
    if call:
        ev.append(
            chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ],
                }
            )
        )
        for piece in split_evenly(call["function"]["arguments"], 4):
            ev.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    else:
        ev.append(chunk({"role": "assistant", "content": "", "refusal": None}))
        for piece in split_evenly(plan["text"], 3):
            ev.append(chunk({"content": piece}))
    ev.append(chunk({}, finish))
    if with_usage:
        ev.append(
            (
                None,
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "system_fingerprint": "fp_fake",
                    "choices": [],
                    "usage": usage,
                },
            )
        )
    ev.append((None, "[DONE]"))
    return openai_sse_reply(ev, summary)
