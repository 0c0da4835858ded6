"""Anthropic Messages answers (``POST /v1/messages``): JSON, or the SSE event stream
(message_start, ping, content_block_start/delta/stop, message_delta, message_stop)."""

from __future__ import annotations

import json
from typing import Any
from typing import Callable

from fakeup.policy import TITLE_TEXT
from fakeup.policy import pick_tool_name
from fakeup.wire import Reply
from fakeup.wire import Request
from fakeup.wire import json_reply
from fakeup.wire import new_id
from fakeup.wire import split_evenly
from fakeup.wire import sse_reply


def _tool_result_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return ""


def anthropic_plan(body: dict, cfg: dict) -> dict:
    """Decide what to answer: ``{"kind": "tool"|"final"|"plain", ...}``."""
    tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    last_user_has_result = bool(
        last_user
        and isinstance(last_user.get("content"), list)
        and any(isinstance(c, dict) and c.get("type") == "tool_result" for c in last_user["content"])
    )
    last_result = None
    results = 0
    for m in messages:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for c in m["content"]:
                if isinstance(c, dict) and c.get("type") == "tool_result":
                    last_result = c
                    results += 1
    more = cfg.get("more_calls") or []
    if tools and last_user_has_result and 1 <= results <= len(more):
        name, args = more[results - 1]
        return {"kind": "tool", "name": name, "args": args, "text": f"Next, the {name} tool."}
    if tools and not last_user_has_result:
        name = pick_tool_name(cfg["tool_name"], tools)
        return {
            "kind": "tool",
            "name": name,
            "args": cfg["tool_args"],
            "text": f"Let me run that with the {name} tool.",
        }
    if last_result is not None:
        return {"kind": "final", "text": f"{cfg['final_text']} {_tool_result_text(last_result)}"}
    return {"kind": "plain", "text": TITLE_TEXT}


def leaked_call_text(name: str, args: Any) -> str:
    """A tool call written as Hermes / Qwen2.5 markup in the answer text (``leak_as_text``)."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


def anthropic_messages(req: Request, cfg: dict) -> Reply:
    body = req.json
    if not isinstance(body, dict):
        return json_reply(
            400,
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "fake_upstream: body is not a JSON object"},
            },
            summary="400 body not JSON",
        )
    plan = anthropic_plan(body, cfg)
    stream = cfg["force_stream"] if cfg.get("force_stream") is not None else bool(body.get("stream"))
    model = body.get("model") or "claude-fake"
    msg_id = new_id("msg_")
    usage = {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 10}
    blocks: list[dict] = [{"type": "text", "text": plan["text"]}]
    if plan["kind"] == "tool" and cfg.get("leak_as_text"):
        # An open model behind an Anthropic-format server that left its call in the text
        # (Hermes / Qwen2.5 JSON markup): no tool_use block, stop_reason end_turn.
        blocks = [{"type": "text", "text": leaked_call_text(plan["name"], plan["args"])}]
        plan = {**plan, "kind": "leaked"}
    elif plan["kind"] == "tool":
        blocks.append({"type": "tool_use", "id": new_id("toolu_"), "name": plan["name"], "input": plan["args"]})
    stop_reason = "tool_use" if plan["kind"] == "tool" else "end_turn"
    summary = f"{plan['kind']}" + (f" {plan['name']}" if plan["kind"] == "tool" else "")
    summary += " sse" if stream else " json"
    message = anthropic_message(msg_id, model, blocks, stop_reason, usage)
    if not stream:
        return json_reply(200, message, summary=summary)
    return sse_reply(message_events(message), summary=summary)


def anthropic_message(
    msg_id: str, model: str, blocks: list[dict], stop_reason: str | None, usage: dict[str, int]
) -> dict:
    """A complete Messages answer (the non-streamed JSON body): ``blocks`` are its ``content``
    (``text`` / ``tool_use`` blocks); ``usage`` needs ``output_tokens``."""
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def message_events(
    message: dict,
    *,
    text_pieces: int = 3,
    json_pieces: int = 4,
    json_text: Callable[[Any], str] = lambda v: json.dumps(v, ensure_ascii=False),
    ping: bool = True,
) -> list[tuple[str | None, Any]]:
    """The SSE events that stream ``message`` (an ``anthropic_message``), as the Messages API
    sends them: message_start (empty content, ``output_tokens`` 1), ping, per block
    content_block_start / content_block_delta x N / content_block_stop, message_delta (stop
    reason, output tokens), message_stop.  A text block's text goes out in ``text_pieces``
    deltas; a tool_use block's input as ``json_text(input)`` in an empty ``input_json_delta``
    and then ``json_pieces`` more (``json_text=str`` sends a string input as it is, for
    malformed argument text).  For ``sse_bytes``."""
    start = {**message, "content": [], "stop_reason": None, "usage": dict(message["usage"], output_tokens=1)}
    ev: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
    if ping:
        ev.append(("ping", {"type": "ping"}))
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            ev.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            for piece in split_evenly(block["text"], text_pieces):
                ev.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}},
                    )
                )
        else:
            ev.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
                    },
                )
            )
            fragments = [""] + split_evenly(json_text(block["input"]), json_pieces)
            for piece in fragments:
                ev.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
                )
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    ev.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
    )
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev
