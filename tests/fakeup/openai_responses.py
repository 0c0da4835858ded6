"""OpenAI Responses answers (``POST [/prefix]/responses``): JSON, or SSE with ``event:`` lines
(function_call, custom_tool_call or message items; namespaces as ``ns/name``)."""

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


def _responses_tools(body: dict) -> list[tuple[str, str, str, str | None]]:
    """``[(param path, name, type, namespace)]`` of the declared named tools (namespaces expanded)."""
    out = []
    for i, t in enumerate(body.get("tools") or []):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            continue
        if t.get("type") == "namespace":
            for j, sub in enumerate(t.get("tools") or []):
                if isinstance(sub, dict) and isinstance(sub.get("name"), str):
                    out.append((f"tools[{i}].tools[{j}].name", sub["name"], sub.get("type") or "function", t["name"]))
        else:
            out.append((f"tools[{i}].name", t["name"], t.get("type") or "function", None))
    return out


def responses_plan(body: dict, cfg: dict) -> dict:
    tools = [n for _, n, _, _ in _responses_tools(body)]
    items = body.get("input")
    items = [it for it in items if isinstance(it, dict)] if isinstance(items, list) else []
    out_types = (
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "mcp_call_output",
    )
    pending = bool(items) and items[-1].get("type") in out_types
    results = [it for it in items if it.get("type") in out_types]
    last = text_of(results[-1].get("output")) if results else None
    fmt = ((body.get("text") or {}).get("format") or {}) if isinstance(body.get("text"), dict) else {}
    schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
    return decide(cfg, tools, pending, last, schema, wants_json=fmt.get("type") == "json_object")


def openai_responses(req: Request, cfg: dict) -> Reply:
    body = req.json
    if not isinstance(body, dict):
        return openai_bad_body()
    declared = _responses_tools(body)
    if cfg.get("reject_long_names"):
        err = long_name_error([(p, n) for p, n, _, _ in declared])
        if err is not None:
            return err
    plan = responses_plan(body, cfg)
    stream = want_stream(cfg, body)
    model = body.get("model") or "gpt-fake"
    rid = new_id("resp_")
    if plan["kind"] == "tool":
        namespace, _, name = plan["name"].rpartition("/")
        kinds = {(ns, n): kind for _, n, kind, ns in declared}
        if kinds.get((namespace or None, name)) == "custom":
            item: dict[str, Any] = {
                "id": new_id("ctc_"),
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": new_id("call_"),
                "name": name,
                "input": args_text(plan["args"]),
            }
        else:
            item = {
                "id": new_id("fc_"),
                "type": "function_call",
                "status": "completed",
                "arguments": args_text(plan["args"]),
                "call_id": new_id("call_"),
                "name": name,
            }
        if namespace:
            item["namespace"] = namespace
    else:
        item = {
            "id": new_id("msg_"),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": plan["text"], "annotations": [], "logprobs": []}],
        }
    usage = {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 10,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 110,
    }
    echo = {
        k: body.get(k, default)
        for k, default in (
            ("instructions", None),
            ("tools", []),
            ("tool_choice", "auto"),
            ("parallel_tool_calls", True),
            ("reasoning", None),
            ("store", False),
            ("text", {"format": {"type": "text"}}),
            ("max_output_tokens", None),
            ("previous_response_id", None),
            ("metadata", {}),
        )
    }

    def response(status: str, output: list, with_usage: bool) -> dict:
        return {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None,
            "model": model,
            "output": output,
            **echo,
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage if with_usage else None,
            "user": None,
        }

    summary = summary_of(plan, "sse" if stream else "json")
    if not stream:
        return json_reply(
            200, response("completed", [item], True), summary=summary, extra_headers=[("x-request-id", new_id("req_"))]
        )

    return openai_sse_reply(response_events(response("completed", [item], True)), summary)


def response_events(
    response: dict, *, text_pieces: int = 3, args_pieces: int = 4, input_pieces: int = 3, in_progress: bool = True
) -> list[tuple[str | None, Any]]:
    """The SSE events that stream ``response`` (a complete Responses object), as the Responses
    API sends them: response.created (status ``in_progress``, no output, ``usage`` null when the
    object has one), response.in_progress (unless ``in_progress=False``), then for each output
    item at its ``output_index``: output_item.added (the item ``in_progress``, empty), its
    deltas (``message``: content_part.added, output_text.delta x ``text_pieces``,
    output_text.done, content_part.done; ``function_call``: function_call_arguments.delta x
    ``args_pieces`` and .done -- none when ``arguments`` is not a string, which then goes out as
    it is; ``custom_tool_call``: custom_tool_call_input.delta x ``input_pieces`` and .done),
    output_item.done; last response.completed with ``response``.  Text events carry
    ``logprobs: []`` when the part has ``logprobs``.  Numbered by ``sequence_number``; for
    ``sse_bytes``."""
    seq = iter(range(1_000_000))
    ev: list[tuple[str | None, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        ev.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

    start = {**response, "status": "in_progress", "output": []}
    if "usage" in start:
        start["usage"] = None
    add("response.created", response=start)
    if in_progress:
        add("response.in_progress", response=start)
    for index, item in enumerate(response["output"]):
        if item["type"] == "function_call":
            args = item["arguments"]
            add(
                "response.output_item.added",
                output_index=index,
                item=dict(item, status="in_progress", arguments="" if isinstance(args, str) else args),
            )
            if isinstance(args, str):
                for piece in split_evenly(args, args_pieces):
                    add("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece)
                add("response.function_call_arguments.done", item_id=item["id"], output_index=index, arguments=args)
        elif item["type"] == "custom_tool_call":
            add("response.output_item.added", output_index=index, item=dict(item, status="in_progress", input=""))
            for piece in split_evenly(item["input"], input_pieces):
                add("response.custom_tool_call_input.delta", item_id=item["id"], output_index=index, delta=piece)
            add("response.custom_tool_call_input.done", item_id=item["id"], output_index=index, input=item["input"])
        else:
            part = item["content"][0]
            logprobs = {"logprobs": []} if "logprobs" in part else {}
            add("response.output_item.added", output_index=index, item=dict(item, status="in_progress", content=[]))
            add(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part={**part, "text": ""},
            )
            for piece in split_evenly(part["text"], text_pieces):
                add(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    **logprobs,
                )
            add(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=part["text"],
                **logprobs,
            )
            add("response.content_part.done", item_id=item["id"], output_index=index, content_index=0, part=part)
        add("response.output_item.done", output_index=index, item=item)
    add("response.completed", response=response)
    return ev
