"""OpenAI Chat Completions (``POST …/chat/completions``): where tool names live.

Shapes from the Chat Completions API reference and the ``openai`` Python SDK types
(``chat_completion_*_param.py``, ``chat_completion_chunk.py``). Streams are SSE with ``data:``
lines only and a final ``data: [DONE]``; a tool call arrives as ``delta.tool_calls[i]`` entries
keyed by ``index``. Upstreams differ (wire-formats §2.5, BR-18, BR-20, BR-21): the name may be
split across chunks, repeated whole in every chunk, or ``""`` after the first; ids may be
missing, empty, repeated per fragment or shared by two calls on one index; ``arguments`` may be
an object. The rewriter assembles each call once, decides once and, only when something must
change, emits a normalized call: id, type and full name in its first delta, then arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from toolvocab.dialects import textcalls
from toolvocab.dialects.base import JSON
from toolvocab.dialects.base import NAMED_BACK
from toolvocab.dialects.base import STOP_KEYS
from toolvocab.dialects.base import FlowContext
from toolvocab.dialects.base import Peek
from toolvocab.dialects.base import Resolver
from toolvocab.dialects.base import apply_decision_name
from toolvocab.dialects.base import as_list
from toolvocab.dialects.base import content_texts
from toolvocab.dialects.base import dedupe_tools
from toolvocab.dialects.base import mark_repeats
from toolvocab.dialects.base import names_stops
from toolvocab.dialects.base import openai_allowed_names
from toolvocab.dialects.base import openai_limits_calls
from toolvocab.dialects.base import parsed_arguments
from toolvocab.dialects.base import path_only
from toolvocab.dialects.base import present
from toolvocab.dialects.base import sections_of
from toolvocab.dialects.base import typed_decode
from toolvocab.dialects.sse import EventStreamRewriter
from toolvocab.dialects.sse import SSEEvent
from toolvocab.dialects.sse import Unreadable
from toolvocab.engine import jsonio
from toolvocab.engine.errors import OPENCODE_INVALID_TOOL
from toolvocab.engine.errors import ToolResult
from toolvocab.engine.ids import stable_call_id
from toolvocab.engine.models import ABSENT
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.names import name_key
from toolvocab.engine.plan import DuplicateCursor
from toolvocab.engine.plan import Plan
from toolvocab.engine.wrapped import MARKUP
from toolvocab.engine.wrapped import PROSE


def _rename(obj: Any, key: str, rename: dict[str, str]) -> bool:
    if isinstance(obj, dict):
        value = obj.get(key)
        if isinstance(value, str) and value in rename:
            obj[key] = rename[value]
            return True
    return False


def _complete_json(text: str) -> bool:
    """True when ``text`` is already a whole JSON value (a call's arguments are complete)."""
    if not text.strip():
        return False
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def _args_text(value: Any) -> tuple[str, bool]:
    """``arguments`` as text, and whether it arrived as an object (BR-21)."""
    if isinstance(value, str):
        return value, False
    if value is None:
        return "", False
    return jsonio.dumps(value).decode(), True


def _function_tool(fn: dict[str, Any]) -> DeclaredTool:
    """A ``function`` declaration (``tools[].function`` or a legacy ``functions[]`` entry, the same
    shape: ``name``, ``description``, ``parameters``) as a :class:`DeclaredTool`."""
    params = fn.get("parameters")
    desc = fn.get("description")
    return DeclaredTool(
        name=fn["name"],
        kind=ToolKind.FUNCTION,
        input_schema=params if isinstance(params, dict) else None,
        description=desc if isinstance(desc, str) else None,
    )


class _Named(msgspec.Struct, gc=False):
    """A ``function`` / ``function_call`` object as the request readers see it: ``arguments`` skipped."""

    name: Any = msgspec.UNSET


class _Call(msgspec.Struct, gc=False):
    type: Any = msgspec.UNSET
    function: _Named | msgspec.UnsetType = msgspec.UNSET


class _Message(msgspec.Struct, gc=False):
    """A message as the peek reads it: ``content`` kept as sent (read only for the prompt's roles)."""

    role: Any = msgspec.UNSET
    name: Any = msgspec.UNSET
    content: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    tool_calls: list[_Call] | msgspec.UnsetType = msgspec.UNSET
    function_call: _Named | msgspec.UnsetType = msgspec.UNSET


class _Request(msgspec.Struct, gc=False):
    """The keys the request readers read (:meth:`OpenAIChat.peek`)."""

    model: Any = msgspec.UNSET
    stream: Any = msgspec.UNSET
    messages: list[_Message] | msgspec.UnsetType = msgspec.UNSET
    tools: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    functions: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    stop: Any = msgspec.UNSET
    stop_token_ids: Any = msgspec.UNSET
    stop_regex: Any = msgspec.UNSET
    tool_choice: Any = msgspec.UNSET
    function_call: Any = msgspec.UNSET
    parallel_tool_calls: Any = msgspec.UNSET


_PEEK = msgspec.json.Decoder(_Request)


class OpenAIChat:
    """The Chat Completions dialect (OpenAI and OpenAI-compatible upstreams)."""

    name = "openai_chat"

    def path_matches(self, method: str, path: str) -> bool:
        """POST to ``…/chat/completions``."""
        return method == "POST" and path_only(path).endswith("/chat/completions")

    def matches(self, method: str, path: str, body: JSON) -> bool:
        """POST to ``…/chat/completions`` with a ``messages`` list."""
        return isinstance(body, dict) and isinstance(body.get("messages"), list) and self.path_matches(method, path)

    def peek(self, method: str, path: str, content: bytes) -> Peek | None:
        """``model``, ``stream``, and of ``messages`` each role, name, legacy ``function_call``
        and the ``function`` names of its ``tool_calls``, and the content of the ``system`` and
        ``developer`` messages; ``tools`` and ``functions`` as sent."""
        request = typed_decode(_PEEK, content) if self.path_matches(method, path) else None
        if request is None or request.messages is msgspec.UNSET:
            return None
        names: list[str] = []
        texts: list[str] = []
        for message in request.messages:
            if message.tool_calls is not msgspec.UNSET:
                for call in message.tool_calls:
                    if call.function is not msgspec.UNSET and type(call.function.name) is str:
                        names.append(call.function.name)
            if message.function_call is not msgspec.UNSET and type(message.function_call.name) is str:
                names.append(message.function_call.name)
            if message.role in ("function", "tool") and type(message.name) is str:
                names.append(message.name)
            if message.role in ("system", "developer") and message.content is not msgspec.UNSET:
                try:
                    texts += content_texts(jsonio.loads(bytes(message.content)))
                except ValueError:
                    return None
        small = present(request, "model", "stream")
        return Peek(
            self.model_of(path, small),
            self.wants_stream(path, small),
            texts,
            texts,
            names,
            sections_of(request, "tools", "functions"),
            stops=self.stop_sequences(present(request, *STOP_KEYS)),
            limited=self.limits_calls(
                choice := present(request, "tool_choice", "function_call", "parallel_tool_calls")
            ),
            allowed=self.allowed_names(choice),
        )

    # -- request ------------------------------------------------------------------------------

    def declared_tools(self, body: JSON) -> list[DeclaredTool]:
        """``tools[]`` function tools (``function``), custom tools (``freeform``) and legacy
        ``functions[]`` (``function``)."""
        out: list[DeclaredTool] = []
        raws: list[Any] = []
        for tool in as_list(body.get("tools")):
            if not isinstance(tool, dict):
                continue
            fn = tool.get("function")
            custom = tool.get("custom")
            if tool.get("type", "function") == "function" and isinstance(fn, dict) and isinstance(fn.get("name"), str):
                out.append(_function_tool(fn))
                raws.append(tool)
            elif tool.get("type") == "custom" and isinstance(custom, dict) and isinstance(custom.get("name"), str):
                out.append(DeclaredTool(name=custom["name"], kind=ToolKind.FREEFORM))
                raws.append(tool)
        for fn in as_list(body.get("functions")):
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                out.append(_function_tool(fn))
                raws.append(fn)
        return mark_repeats(out, raws)

    def declarations(self, body: JSON) -> JSON:
        """``[body["tools"], body["functions"]]``: all that :meth:`declared_tools` reads."""
        return [body.get("tools"), body.get("functions")] if isinstance(body, dict) else None

    def transcript_names(self, body: JSON) -> list[str]:
        """Names of earlier calls in the transcript (assistant ``tool_calls``, legacy
        ``function_call``, ``role: "function"`` messages and the ``name`` a client may put on a
        ``role: "tool"`` result)."""
        names: list[str] = []
        for message in as_list(body.get("messages")):
            if not isinstance(message, dict):
                continue
            for call in as_list(message.get("tool_calls")):
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                    names.append(fn["name"])
            legacy = message.get("function_call")
            if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
                names.append(legacy["name"])
            if message.get("role") in ("function", "tool") and isinstance(message.get("name"), str):
                names.append(message["name"])
        return names

    def transcript_calls(self, body: JSON, keep: Callable[[str], bool] | None = None) -> list[tuple[str, Any]]:
        """``(name, arguments)`` of each assistant ``tool_calls`` entry and legacy
        ``function_call``, in order (with ``keep``, of those whose name it accepts: no other
        call's arguments are parsed); ``arguments`` parsed when it is a JSON object's text."""
        calls: list[tuple[str, Any]] = []
        for message in as_list(body.get("messages")):
            if not isinstance(message, dict):
                continue
            fns = [call.get("function") for call in as_list(message.get("tool_calls")) if isinstance(call, dict)]
            fns.append(message.get("function_call"))
            calls += [
                (fn["name"], parsed_arguments(fn.get("arguments")))
                for fn in fns
                if isinstance(fn, dict) and isinstance(fn.get("name"), str) and (keep is None or keep(fn["name"]))
            ]
        return calls

    def tool_results(self, body: JSON) -> list[ToolResult]:
        """Every ``role: "tool"`` message (and legacy ``role: "function"`` message), in order.

        Text is the content string or its text parts joined by newlines; Chat carries no error
        flag, so ``is_error`` is ``None`` — except for a result of OpenCode's ``invalid`` sink
        (an assistant call named ``invalid`` whose arguments hold ``tool`` and ``error``), which
        is an error by construction. The name comes from the assistant ``tool_calls`` entry with
        the same id (``function.name`` or ``custom.name``); a legacy function message names
        itself.
        """
        results: list[ToolResult] = []
        calls: dict[str, tuple[str | None, bool]] = {}
        messages = body.get("messages") if isinstance(body, dict) else None
        for message in messages if isinstance(messages, list) else ():
            if not isinstance(message, dict):
                continue
            role = message.get("role")
            tool_calls = message.get("tool_calls")
            for call in tool_calls if isinstance(tool_calls, list) else ():
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    calls[call["id"]] = _call_name_and_sink(call)
            if role == "tool":
                call_id = message.get("tool_call_id") if isinstance(message.get("tool_call_id"), str) else None
                name, sink = calls.get(call_id, (None, False)) if call_id is not None else (None, False)
                results.append(
                    ToolResult(
                        call_id=call_id,
                        name=name,
                        text="\n".join(content_texts(message.get("content"))),
                        is_error=True if sink else None,
                    )
                )
            elif role == "function" and isinstance(message.get("name"), str):
                results.append(ToolResult(name=message["name"], text="\n".join(content_texts(message.get("content")))))
        return results

    def model_of(self, path: str, body: JSON) -> str | None:
        """``model`` from the body."""
        return body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None

    def platform_texts(self, body: JSON) -> list[str]:
        """The system texts (where this agent family describes its machine)."""
        return self.system_texts(body)

    def system_texts(self, body: JSON) -> list[str]:
        """Text of every ``system`` and ``developer`` message."""
        texts: list[str] = []
        for message in as_list(body.get("messages")):
            if isinstance(message, dict) and message.get("role") in ("system", "developer"):
                texts += content_texts(message.get("content"))
        return texts

    def apply_request(self, body: JSON, plan: Plan) -> bool:
        """Rename per ``plan.rename_map`` in function tools, legacy ``functions``,
        ``tool_choice`` (function and ``allowed_tools``), ``function_call``, assistant
        ``tool_calls`` and ``role: "function"`` messages; add the prompt sentence to the first
        system/developer message (or a new system message first)."""
        changed = False
        rename = plan.rename_map
        cursor = DuplicateCursor(plan)  # one count over tools, then functions (declared_tools' order)
        if isinstance(body.get("tools"), list):
            changed |= dedupe_tools(body["tools"], plan, _chat_tool_name, _set_chat_tool_name, cursor=cursor)
        if isinstance(body.get("functions"), list):
            changed |= dedupe_tools(body["functions"], plan, _function_name, _set_function_name, cursor=cursor)
        if rename:
            for tool in as_list(body.get("tools")):
                if isinstance(tool, dict) and tool.get("type", "function") == "function":
                    changed |= _rename(tool.get("function"), "name", rename)
            for fn in as_list(body.get("functions")):
                changed |= _rename(fn, "name", rename)
            choice = body.get("tool_choice")
            if isinstance(choice, dict):
                changed |= _rename(choice.get("function"), "name", rename)
                allowed = choice.get("allowed_tools")
                if isinstance(allowed, dict):
                    for entry in as_list(allowed.get("tools")):
                        if isinstance(entry, dict):
                            changed |= _rename(entry.get("function"), "name", rename)
            changed |= _rename(body.get("function_call"), "name", rename)
            for message in as_list(body.get("messages")):
                if not isinstance(message, dict):
                    continue
                for call in as_list(message.get("tool_calls")):
                    if isinstance(call, dict) and call.get("type", "function") == "function":
                        changed |= _rename(call.get("function"), "name", rename)
                changed |= _rename(message.get("function_call"), "name", rename)
                if message.get("role") in ("function", "tool"):
                    # a result names its call's function: legacy ones must; some clients send it on
                    # a tool result too, which OpenAI-compatible servers may read or check
                    changed |= _rename(message, "name", rename)
        if plan.prompt_sentence:
            changed |= _add_sentence(body, plan.prompt_sentence)
        return changed

    def request_keys(self, body: JSON, plan: Plan, aliases: dict[str, str] | None = None) -> frozenset[str] | None:
        """``tools``, ``functions``, ``tool_choice``, ``function_call``; ``messages`` when names
        are renamed (earlier ``tool_calls``, ``role: "function"`` and ``"tool"``) or for the prompt sentence
        (it goes into a system message)."""
        keys = {"tools", "functions", "tool_choice", "function_call"}
        if plan.rename_map or plan.prompt_sentence:
            keys.add("messages")
        return frozenset(keys)

    def request_heads(self, body: JSON, plan: Plan) -> dict[str, int]:
        """``messages`` up to the first system or developer message (none: the sentence goes
        first) when the prompt sentence is the one change to it: a renamed name changes any
        message."""
        messages = body.get("messages") if isinstance(body, dict) else None
        if not plan.prompt_sentence or plan.rename_map or not isinstance(messages, list):
            return {}
        at = _sentence_message(messages)
        return {"messages": 0 if at is None else at + 1}  # none: a system message goes first

    # -- response -----------------------------------------------------------------------------

    def call_id_aliases(self, body: JSON) -> dict[str, str]:
        """``{}``: no Chat Completions upstream this addon knows refuses a replayed id."""
        return {}

    def alias_call_ids(self, body: JSON, aliases: dict[str, str] | None = None) -> dict[str, str]:
        """``{}``: no Chat Completions upstream this addon knows refuses a replayed id."""
        return {}

    def rewrite_response(self, body: JSON, flow: FlowContext) -> bool:
        """Resolve every call in ``choices[].message.tool_calls`` (and legacy
        ``function_call``); serialize object arguments; give missing, empty or repeated ids a
        stable id; lift calls from a ``content`` that is nothing but tool-call markup
        (:func:`lift_text_calls`); a choice that carries tool calls and ends with
        ``finish_reason: "stop"`` gets ``"tool_calls"``."""
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
            return False
        changed = False
        seen: set[str] = set()
        position = 0
        resolve = flow.resolve
        for choice in body["choices"]:
            message = choice.get("message") if isinstance(choice, dict) else None
            if not isinstance(message, dict):
                continue
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                kept: list[Any] = []
                for call in calls:
                    if not isinstance(call, dict):
                        kept.append(call)
                        continue
                    expanded = _expand_parallel(call, flow)
                    if expanded is not None:
                        kept.extend(expanded)  # BR-08: the wrapper becomes its calls
                        for entry in expanded:
                            # <wrapper id>_<i> (call_<i> without one) may be an id the answer has
                            if entry["id"] in seen:
                                entry["id"] = stable_call_id(flow.flow_key, position)
                            seen.add(entry["id"])
                            position += 1
                        changed = True
                        continue
                    changed |= _apply_call(call, flow, seen, position, truncated=_cut_off(choice.get("finish_reason")))
                    kept.append(call)
                    position += 1
                if changed:
                    message["tool_calls"] = kept
            legacy = message.get("function_call")
            if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
                changed |= _apply_function(
                    legacy, resolve, legacy_id=None, truncated=_cut_off(choice.get("finish_reason"))
                )
            if (
                not message.get("tool_calls")
                and not message.get("function_call")  # a legacy call came: the text is only text
                and not _declines_or_cites(message)  # a refusal, a citation: markup beside it is prose
                and isinstance(message.get("content"), str)
                and _natural_end(choice.get("finish_reason"))
            ):
                lifted = lift_text_calls(message["content"], flow, position)
                if lifted is not None:
                    text, entries = lifted
                    message["content"] = text.strip() or None
                    message["tool_calls"] = entries
                    position += len(entries)
                    changed = True
            if (
                message.get("tool_calls")
                and isinstance(message["tool_calls"], list)
                and choice.get("finish_reason") == "stop"
            ):
                # A choice that carries tool calls ends with "tool_calls", as the API documents it
                # (BR-23: "stop" makes clients print the answer instead of running it); "length",
                # "content_filter" and the rest stay.
                choice["finish_reason"] = "tool_calls"
                changed = True
        return changed

    def answer_may_change(self, raw: bytes) -> bool:
        """True when ``raw`` (a JSON answer's bytes) holds ``tool_calls`` or ``function_call``
        (the keys of the calls :meth:`rewrite_response` changes) or what may be markup
        (:func:`textcalls.may_hold_markup_json`, which counts any ``\\u`` escape: one could spell
        either key). False: nothing in it to read."""
        return b"tool_calls" in raw or b"function_call" in raw or textcalls.may_hold_markup_json(raw)

    def wants_stream(self, path: str, body: JSON) -> bool:
        """``"stream": true`` in the request body."""
        return isinstance(body, dict) and body.get("stream") is True

    def answers_unread(self, path: str, body: JSON) -> str | None:
        """``None``: every answer of this API is read (JSON, an event stream, a JSON array)."""
        return None

    def keeps_answer(self, body: JSON) -> bool:
        """False: no request of this API continues from a kept answer by its id."""
        return False

    def stop_sequences(self, body: JSON) -> bool:
        """A non-empty ``stop`` (a string or a list), ``stop_token_ids`` or ``stop_regex`` (:data:`STOP_KEYS`): the
        API ends an answer at one with ``finish_reason`` ``stop``, as at its natural end (OpenAI
        API reference, the chat completion object's ``finish_reason``: "stop if the model hit a
        natural stop point or a provided stop sequence"; vLLM reports ``stop`` for its stop
        strings, stop tokens and EOS alike)."""
        return names_stops(body)

    def limits_calls(self, body: JSON) -> bool:
        """A ``tool_choice`` other than ``auto``/``required``/none (``none``, one named function, an
        ``allowed_tools`` list), ``parallel_tool_calls: false``, or a legacy ``function_call`` other
        than ``auto`` (:func:`toolvocab.dialects.base.openai_limits_calls`)."""
        return openai_limits_calls(body, legacy=True)

    def allowed_names(self, body: JSON) -> frozenset[str] | None:
        """:func:`toolvocab.dialects.base.openai_allowed_names`, with the legacy ``function_call``."""
        return openai_allowed_names(body, legacy=True)

    def stream_rewriter(self, flow: FlowContext) -> ChatStream:
        """A fresh :class:`ChatStream` for one flow."""
        return ChatStream(flow)


def _call_name_and_sink(call: dict[str, Any]) -> tuple[str | None, bool]:
    """A transcript call's name, and whether it is OpenCode's ``invalid`` sink (tool
    ``invalid`` with ``{"tool", "error"}`` arguments; only that call's arguments are parsed)."""
    for key in ("function", "custom"):
        inner = call.get(key)
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            name = inner["name"]
            if name != OPENCODE_INVALID_TOOL:
                return name, False
            arguments = inner.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = orjson.loads(arguments)
                except orjson.JSONDecodeError:
                    arguments = None
            sink = isinstance(arguments, dict) and "tool" in arguments and "error" in arguments
            return name, sink
    return None, False


def _chat_tool_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    inner = tool.get("function") if tool.get("type", "function") == "function" else tool.get("custom")
    return inner.get("name") if isinstance(inner, dict) and isinstance(inner.get("name"), str) else None


def _set_chat_tool_name(tool: Any, alias: str) -> None:
    if tool.get("type", "function") == "function":
        tool["function"]["name"] = alias


def _function_name(fn: Any) -> str | None:
    """A legacy ``functions[]`` entry's name (counted as :meth:`OpenAIChat.declared_tools` counts it)."""
    return fn["name"] if isinstance(fn, dict) and isinstance(fn.get("name"), str) else None


def _set_function_name(fn: Any, alias: str) -> None:
    fn["name"] = alias


def _sentence_message(messages: list[Any]) -> int | None:
    """Where the prompt sentence goes: the index of the first system or developer message, or
    ``None`` (a system message of its own goes first)."""
    for at, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            return at
    return None


def _add_sentence(body: dict[str, Any], sentence: str) -> bool:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return False
    at = _sentence_message(messages)
    if at is None:
        messages.insert(0, {"role": "system", "content": sentence})
        return True
    message = messages[at]
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = content + "\n\n" + sentence if content else sentence
        return True
    if isinstance(content, list):
        content.append({"type": "text", "text": sentence})
        return True
    if content is None:
        message["content"] = sentence
        return True
    return False


def _expand_parallel(call: dict[str, Any], flow: FlowContext) -> list[dict[str, Any]] | None:
    """The tool_calls entries a ``multi_tool_use.parallel`` wrapper stands for (BR-08), each
    resolved to a declared tool; ``None`` when ``call`` is no wrapper or any part of it does not
    resolve (then the wrapper is left whole)."""
    fn = call.get("function")
    if call.get("type", "function") != "function" or not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return None
    text, _ = _args_text(fn.get("arguments"))
    wrapper = ToolCall.read(fn["name"], text, call_id=call.get("id"))
    expanded = textcalls.expand_parallel(wrapper, flow)
    if expanded is None:
        return None
    entries = []
    for sub, decision in expanded:
        args = decision.arguments_after if decision.arguments_after is not None else sub.arguments
        entries.append(
            {
                "id": sub.id,
                "type": "function",
                "function": {"name": decision.target, "arguments": jsonio.dumps(args).decode()},
            }
        )
    return entries


def lift_text_calls(text: str, flow: FlowContext, position: int) -> tuple[str, list[dict[str, Any]]] | None:
    """Tool calls a model left in ``content`` (Qwen3-Coder XML, BR-23; Kimi markers, BR-24;
    Hermes JSON, Llama ``<function=…>``, DeepSeek markers) as ``tool_calls`` entries,
    with the text that remains (the leading reasoning block, or ``""``;
    :func:`toolvocab.dialects.textcalls.lift`); ``None`` to leave the text as it came (any prose around
    the markup, markup incomplete, a function or parameter not declared, a call that does not
    resolve or whose arguments fail the schema)."""
    lifted = textcalls.lift(text, flow, lambda i: stable_call_id(flow.flow_key, position + i))
    if lifted is None:
        return None
    remaining, calls = lifted
    entries = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": jsonio.dumps(c.arguments).decode()}}
        for c in calls
    ]
    return remaining, entries


#: ``finish_reason`` values after which a text may be lifted: the model ended its turn itself
#: (``stop``; ``tool_calls`` / ``function_call`` from a server whose parser saw the call but left it
#: in the text). Any other — a token limit, ``content_filter``, a server's own — may have cut the
#: text short or withheld what followed: the text stays text.
_LIFT_REASONS = frozenset({"stop", "tool_calls", "function_call"})


def _natural_end(finish_reason: Any) -> bool:
    """True for a ``finish_reason`` after which an answer's text may be lifted (:data:`_LIFT_REASONS`)."""
    return isinstance(finish_reason, str) and finish_reason in _LIFT_REASONS


def _cut_off(finish_reason: Any) -> bool:
    """True unless the choice ended naturally (:func:`_natural_end`: ``stop``, ``tool_calls``,
    ``function_call``): a token limit (``length``), ``content_filter``, a server's own reason
    (DeepSeek's ``insufficient_system_resource``), a value of another type, or none at all may
    have stopped the answer inside a call's arguments, which are then never completed. The same
    streamed and whole (a stream that stops before the choice's ``finish_reason`` has none)."""
    return not _natural_end(finish_reason)


def _apply_function(fn: dict[str, Any], resolve: Resolver, legacy_id: str | None, *, truncated: bool = False) -> bool:
    """Resolve one ``{name, arguments}`` object in place. Empty arguments (``""``, ``null``,
    ``[]``) reach the engine as such (it writes ``"{}"`` for a tool that requires nothing); absent
    ones stay absent. ``truncated``: the choice was cut off (its arguments are never completed)."""
    raw_args = fn.get("arguments")
    text, was_object = _args_text(raw_args)
    call = ToolCall.read(fn["name"], text if "arguments" in fn else ABSENT, call_id=legacy_id)
    if truncated:
        call = call.model_copy(update={"truncated": True})
    decision = resolve(call)
    changed = False
    new_name = apply_decision_name(decision) if decision.changed else None
    if new_name is not None:
        fn["name"] = new_name
        changed = True
    if decision.changed and decision.arguments_after is not None:
        fn["arguments"] = jsonio.dumps(decision.arguments_after).decode()
        changed = True
    elif was_object:
        fn["arguments"] = text
        changed = True
    return changed


def _apply_call(
    call: dict[str, Any], flow: FlowContext, seen: set[str], position: int, *, truncated: bool = False
) -> bool:
    resolve = flow.resolve
    changed = False
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id or call_id in seen:
        call["id"] = stable_call_id(flow.flow_key, position)
        changed = True
    seen.add(call["id"])
    kind = call.get("type", "function")
    if kind == "function" and isinstance(call.get("function"), dict) and isinstance(call["function"].get("name"), str):
        changed |= _apply_function(call["function"], resolve, call["id"], truncated=truncated)
    elif kind == "custom" and isinstance(call.get("custom"), dict) and isinstance(call["custom"].get("name"), str):
        custom = call["custom"]
        decision = resolve(
            ToolCall(name=custom["name"], raw_arguments=custom.get("input"), id=call["id"], kind=ToolKind.FREEFORM)
        )
        new_name = apply_decision_name(decision) if decision.changed else None
        if new_name is not None:
            custom["name"] = new_name
            changed = True
    return changed


def _other_choice(choice: Any) -> bool:
    """True for a choice of a chunk that is not the first choice (``index`` other than 0)."""
    return isinstance(choice, dict) and choice.get("index", 0) != 0


#: The keys of a Chat Completions chunk object (OpenAI API reference, the chat completion chunk
#: object; ``obfuscation`` with ``stream_options.include_obfuscation``).
_CHUNK_KEYS = frozenset(
    {"id", "object", "created", "model", "choices", "system_fingerprint", "service_tier", "usage", "obfuscation"}
)
#: The keys of a chunk that carries usage alone: the chunk object's, and OpenRouter's ``provider``.
_USAGE_CHUNK_KEYS = _CHUNK_KEYS | {"provider"}


def _usage_only(data: Any) -> bool:
    """True for a chunk that carries usage and nothing else: no choice (``choices`` absent or
    ``[]``), only :data:`_USAGE_CHUNK_KEYS`."""
    return (
        isinstance(data, dict)
        and "usage" in data
        and data.get("choices", []) == []
        and all(key in _USAGE_CHUNK_KEYS for key in data)
    )


def _declines_or_cites(message: Any) -> bool:
    """True for a message (a JSON answer's ``message``, a stream's ``delta``) that carries a
    ``refusal`` (the model declined) or ``annotations`` (``url_citation``s: the text quotes a
    source; OpenAI's search models, OpenRouter's web plugin), any value but ``null``, ``""`` or
    an empty list."""
    return isinstance(message, dict) and (
        message.get("refusal") not in (None, "") or message.get("annotations") not in (None, [])
    )


def _refuses(choice: Any) -> bool:
    """True for a choice whose delta declines or cites (:func:`_declines_or_cites`)."""
    return isinstance(choice, dict) and _declines_or_cites(choice.get("delta"))


def _content_of(choices: Any) -> str:
    """The text of the content deltas in one chunk's ``choices``."""
    if not isinstance(choices, list):
        return ""
    parts = []
    for c in choices:
        delta = c.get("delta") if isinstance(c, dict) else None
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            parts.append(delta["content"])
    return "".join(parts)


class _Slot:
    """One streamed tool call being assembled."""

    __slots__ = (
        "choice",
        "index",
        "out_index",
        "id",
        "type",
        "name",
        "name_parts",
        "fragments",
        "was_object",
        "needs_normalize",
        "first_seen",
        "named",
        "late",
    )

    def __init__(self, choice: int, index: int, out_index: int) -> None:
        self.choice = choice
        self.index = index
        self.out_index = out_index
        self.id: str | None = None
        self.type: str | None = None
        self.name = ""
        self.name_parts = 0
        self.fragments: list[str] = []
        self.was_object = False
        self.needs_normalize = False
        self.first_seen: tuple[int, int] | None = None  # (held event number, delta number)
        self.named = False  # a delta carried a "name" (an empty one is a blank name)
        self.late = False  # it continues a call that went out at its choice's finish_reason


def _finish_reasons(held: list[SSEEvent]) -> dict[Any, Any]:
    """Choice index → the ``finish_reason`` the held chunks carry for it (absent: none came)."""
    out: dict[Any, Any] = {}
    for event in held:
        data = event.json()
        for choice in as_list(data.get("choices")) if isinstance(data, dict) else ():
            if isinstance(choice, dict) and choice.get("finish_reason"):
                out[choice.get("index", 0)] = choice["finish_reason"]
    return out


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ends_the_choices(events: list[SSEEvent], held: set[Any]) -> bool:
    """``events`` (held since a call's name began an alias) end every choice in ``held``
    (choice indexes): the last is ``[DONE]``, or each of them had a chunk with a
    ``finish_reason``. Another choice's end, or a chunk of no choice (usage, a mid-stream
    ``"choices": []``), ends none of them."""
    if _done(events[-1]):
        return True
    ended: set[Any] = set()
    for event in events:
        data = event.json()
        choices = data.get("choices") if isinstance(data, dict) else None
        for c in choices if isinstance(choices, list) else ():
            if isinstance(c, dict) and c.get("finish_reason"):
                ended.add(c.get("index", 0))
    return bool(held) and held <= ended


def _done(event: SSEEvent) -> bool:
    """``event`` is the stream's ``[DONE]``."""
    return event.data is not None and event.data.strip() == "[DONE]"


def _odd_indices(held: list[SSEEvent]) -> bool:
    """True when a held chunk carries a choice ``index`` or a tool-call ``index`` that is
    present but not an integer."""
    for event in held:
        data = event.json()
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            continue
        for choice in data["choices"]:
            if not isinstance(choice, dict):
                continue
            if "index" in choice and not _is_index(choice["index"]):
                return True
            delta = choice.get("delta")
            calls = delta.get("tool_calls") if isinstance(delta, dict) else None
            if isinstance(calls, list) and any(
                isinstance(tc, dict) and "index" in tc and not _is_index(tc["index"]) for tc in calls
            ):
                return True
    return False


def _hold_to_end_of_choice(
    held: list[SSEEvent],
    event: SSEEvent,
    choices: Any,
    release: Callable[[], list[bytes]],
    open_choices: set[Any],
    key: str,
    at_finish: Callable[[], list[bytes]] | None = None,
) -> list[bytes]:
    """Hold a streamed call's chunk until its calls are complete; the bytes to send now.

    ``held`` is the list ``release`` assembles and sends (then clears); ``open_choices`` the
    indexes of the choices whose calls (``delta[key]``: ``tool_calls``, or a legacy
    ``function_call``) are held and have not finished, kept across the hold's chunks. A comment
    or keep-alive (``": OPENROUTER PROCESSING"``) inside a call is held in place, so a stream
    that needs no change still goes out byte-identical; so is a chunk with an empty ``choices``
    list (or none) and no ``usage`` or ``error`` value (a content-filter chunk; ``"usage": null``
    on every chunk but the last under ``stream_options.include_usage``): neither says the calls
    are complete. ``[DONE]``, the usage chunk or an error (no choice): the calls are complete,
    what is held goes, then the event. A chunk with a ``finish_reason`` is held, then everything
    goes once every choice whose calls are held has finished (with ``n`` > 1 another choice may
    finish while a call is still streaming: its later deltas belong to the same call); through
    ``at_finish`` when given (the held calls' choices have ended, the stream has not: later
    deltas may still continue them).
    """
    if event.data is None:
        held.append(event)
        return []
    if not isinstance(choices, list) or not choices:
        data = event.json()
        # [DONE] (not JSON), the usage chunk, an error end the calls; "usage": null (every
        # chunk but the last under stream_options.include_usage), "choices": null, {}: do not
        if not isinstance(data, dict) or data.get("usage") or data.get("error"):
            return release() + [event.raw]
    held.append(event)
    if not isinstance(choices, list):
        return []
    finished = False
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        index = choice.get("index", 0)
        index = index if type(index) in (int, str) else repr(index)  # any JSON value: hashable
        delta = choice.get("delta")
        if isinstance(delta, dict) and delta.get(key):
            open_choices.add(index)
        if choice.get("finish_reason"):
            open_choices.discard(index)
            finished = True
    if finished and not open_choices:
        return (at_finish or release)()
    return []


class ChatStream(EventStreamRewriter):
    """Rewrites a Chat Completions SSE stream.

    Chunks without tool calls go out at once. From the first chunk carrying ``tool_calls``
    until the choice's ``finish_reason`` (or ``[DONE]``, a usage-only chunk, an error, the end),
    chunks are held; then every call is assembled, resolved once, and the held chunks are sent —
    byte-identical when no call needs a change, else rebuilt with each call normalized: its first
    delta carries id, type and the full (resolved) name, later deltas only arguments; fitted
    arguments go out whole in the first delta. A choice that carried tool calls and ends with
    ``finish_reason: "stop"`` ends with ``"tool_calls"``.

    Content goes out at once while it is only whitespace or a leading reasoning block, and for
    good once it holds any other text before markup (prose is never lifted). From the chunk
    where tool-call markup may start after that lead, content is held to the end of the choice:
    released unchanged as soon as prose appears, else lifted when the whole text is markup
    (:func:`lift_text_calls`).
    """

    #: Streamed calls carry ``tool_calls`` (legacy: ``function_call``) (other events
    #: pass unparsed, except while :meth:`holding`).
    MARKERS = (b"tool_calls", b"function_call")

    def holding(self) -> bool:
        """Every event goes to :meth:`on_event` while chunks are held, while the content may
        still turn out to be tool-call markup (until it is prose), and once a choice carried
        tool calls (its ``finish_reason`` may need fixing)."""
        return (
            self._held is not None
            or self._hold.held is not None
            or self._legacy is not None
            or not self._prose
            or bool(self._with_calls)
            or self._name_hold is not None
        )

    def __init__(self, flow: FlowContext) -> None:
        super().__init__()
        self._flow = flow
        self._resolve = flow.resolve
        self._held: list[SSEEvent] | None = None
        self._position = 0  # calls resolved so far in this answer (for stable ids)
        self._ambiguous = False  # _assemble: a piece under another id may be a call or a name's rest
        #: (choice, index) of each call that went out at its choice's finish_reason: a later delta
        #: with no id continues it (_only_late, _Slot.late)
        self._ended_calls: set[tuple[Any, Any]] = set()
        #: (choice, index) of a call that went out at another index (it moved up past a
        #: wrapper's calls, _rebuild): where a later delta of it goes
        self._moved: dict[tuple[Any, Any], int] = {}
        self._seen_ids: set[str] = set()
        # Every content delta so far (while a lift is still possible), and the chunks held from
        # where markup may start.
        self._hold = textcalls.TextHold()
        # The held markup's choice ended naturally: lifted at the stream's end ([DONE], or its
        # close), as late as a chunk after the finish may still say it is prose (a refusal, a
        # citation: the JSON answer reads both whatever their place)
        self._ended = False
        self._tail_usage = False  # the one usage chunk the tail may hold (after _ended)
        # The content is prose, real tool calls came, or no tools to lift to: never hold text.
        self._prose = flow.tools is None or flow.stops or flow.limited  # nothing will be lifted: no text is held
        self._with_calls: set[Any] = set()  # choice indexes that carry tool calls
        self._legacy: list[SSEEvent] | None = None  # chunks of a legacy delta.function_call
        #: After a stall's let_go: every event passes as it came but for an alias given back
        self._giving_back = False
        #: While giving back: the chunks held since a call's name so far began an alias of this
        #: flow (its pieces may make it whole), to a choice's end.
        self._name_hold: list[SSEEvent] | None = None
        #: The held calls' choices have ended (a finish_reason): held on while the next chunks
        #: only continue them (late deltas: the rest of a name, its arguments), released whole at
        #: the first chunk that does not (_continues_held), [DONE] or the end.
        self._late_wait = False
        #: The (choice, index) of each call held while waiting (_await_late).
        self._late_keys: set[tuple[Any, Any]] = set()
        # The choices whose held calls (legacy function_call) have not finished yet
        # (_hold_to_end_of_choice)
        self._open_calls: set[Any] = set()
        self._open_legacy: set[Any] = set()

    def has_held(self) -> bool:
        """Tool-call chunks, a legacy function_call or content that may be markup are held."""
        return bool(self._held) or bool(self._hold.held) or bool(self._legacy) or bool(self._name_hold)

    def held(self) -> list[bytes]:
        """Raw bytes of the held chunks (clears them)."""
        held, self._held, self._late_wait = self._held or [], None, False
        text = self._hold.release()
        legacy, self._legacy = self._legacy or [], None
        names, self._name_hold = self._name_hold or [], None
        return [e.raw for e in text + held + legacy + names]

    def let_go(self, why: str) -> list[bytes]:
        """What is held, given up (:meth:`EventStreamRewriter.let_go`): held text as it came
        (never lifted), the held calls' chunks (tool calls, a legacy ``function_call``) as they
        came but for each name that is an upstream alias of this flow, given back. Calls are
        assembled only at their choice's end, so what follows is no call known whole: the rest of
        the stream passes as it comes, but for such names, given back in every later delta."""
        text = self._hold.release()
        self._settle()
        # calls whose choices ended (waiting for late deltas) are whole: decided, not given up
        whole = self._release() if self._late_wait else []
        calls = (self._held or []) + (self._legacy or []) + (self._name_hold or [])
        self._held = self._legacy = self._name_hold = None
        self._late_wait = False
        self._giving_back = True
        self.repairs_after_let_go = False
        if self._begins_an_alias(calls):
            # A call's name so far only begins an alias: its later pieces would reach the client
            # after a first piece that is no name of its own. Held on, as a give-back holds (to
            # its choice's end, the stream's end, or the upstream's close: salvage releases it).
            self._name_hold = calls
            return [e.raw for e in text] + whole
        backs: list[str] = []
        calls = self._join_split_names(calls, backs)
        out = [e.raw for e in text] + whole + [self._give_names_back(e, backs) for e in calls]
        if calls:
            self.unrepaired.append(f"{why} while tool calls were held")
            if backs:
                self.unrepaired[-1] += NAMED_BACK + ", ".join(dict.fromkeys(backs))
        return out

    def give_back(self, why: str) -> list[bytes]:
        """:meth:`EventStreamRewriter.give_back`: :meth:`let_go` (after it, every event goes as
        it came but for such names, given back)."""
        return self.let_go(why)

    def hold_behind(self, raw: bytes) -> bool:
        """:meth:`EventStreamRewriter.hold_behind`: while :meth:`let_go` holds a call whose
        name only began an alias, the event that could not be read is held behind it (the
        client gets the stream in its order)."""
        if self._name_hold is None:
            return False
        self._name_hold.append(SSEEvent(raw=raw))  # no data read: no name, no choice's end
        return True

    def _begins_an_alias(self, held: list[SSEEvent]) -> bool:
        """A call in ``held`` (its choice's and index's name pieces, as
        :meth:`_join_split_names` groups them) whose name so far only begins an upstream alias
        of this flow."""
        if _odd_indices(held):
            return False
        calls: dict[tuple[Any, Any], list[Any]] = {}  # (choice, index) -> [id, name so far] of its last call
        for event in held:
            for _, _, choice, index, new_id, name in self._name_pieces(event):
                call = calls.setdefault((choice, index), [None, ""])
                if isinstance(new_id, str) and call[0] not in (None, new_id):
                    call[1] = ""  # another call at this index
                if isinstance(new_id, str):
                    call[0] = new_id
                if isinstance(name, str):
                    call[1] += name
        return any(self._strict_alias_prefix(name) for _, name in calls.values())

    def _give_back_event(self, event: SSEEvent) -> list[bytes]:
        """One chunk while giving back (after :meth:`let_go`): as it came but for an alias of
        this flow, given back. From a call whose name so far only begins such an alias (its
        pieces may make it whole), every chunk is held to the end of the choices of the calls held
        (each one's ``finish_reason``, or ``[DONE]``), then let go with each call's pieces joined
        (:meth:`_join_split_names`: interleaved calls, arguments between pieces and legacy
        ``function_call`` names too). The stream's end and the upstream's close release it too;
        a stall or a give-up (:meth:`let_go`) holds it on while a name still only begins an alias."""
        if self._name_hold is None:
            if not any(self._strict_alias_prefix(piece[-1]) for piece in self._name_pieces(event)):
                return [self._give_names_back(event, [])]
            self._name_hold = [event]
        else:
            self._name_hold.append(event)
        if not _ends_the_choices(self._name_hold, self._held_choices(self._name_hold)) or (
            not _done(self._name_hold[-1]) and self._begins_an_alias(self._name_hold)
        ):
            # a name that still only begins an alias may go on after its choice's finish_reason
            # (a late delta): held to [DONE], the stream's end or the upstream's close
            return []
        held, self._name_hold = self._name_hold, None
        return self._release_names(held)

    def _release_names(self, held: list[SSEEvent]) -> list[bytes]:
        """``held`` (a give-back's hold) as it came but for each call's name, in pieces or
        whole, that is an upstream alias of this flow, given back."""
        backs: list[str] = []
        return [self._give_names_back(e, backs) for e in self._join_split_names(held, backs)]

    def _await_late(self) -> list[bytes]:
        """At the finish_reason that ends the held calls' choices: nothing goes yet
        (:attr:`_late_wait`); the (choice, index) of each held call, kept for
        :meth:`_continues_held`."""
        self._late_wait = True
        self._late_keys = set()
        for e in self._held or []:
            data = e.json()
            for choice in as_list(data.get("choices")) if isinstance(data, dict) else ():
                delta = choice.get("delta") if isinstance(choice, dict) else None
                for d_no, tc in enumerate(as_list(delta.get("tool_calls")) if isinstance(delta, dict) else ()):
                    if isinstance(tc, dict):
                        self._late_keys.add((choice.get("index", 0), tc.get("index", d_no)))
        return []

    def _continues_held(self, event: SSEEvent, choices: Any) -> bool:
        """``event`` only continues the held calls, or says nothing: a comment; a chunk with no
        choice and no ``usage`` or ``error`` value (``"usage": null``); a chunk whose every choice
        carries nothing but tool-call deltas without an id at a (choice, index) a held call has
        (with that choice's finish_reason again or none), or an empty delta (``"content": ""``)
        and no finish_reason."""
        if event.data is None:
            return True
        if not isinstance(choices, list) or not choices:
            data = event.json()
            return isinstance(data, dict) and not data.get("usage") and not data.get("error")
        for choice in choices:
            if not isinstance(choice, dict) or set(choice) - {"index", "delta", "finish_reason", "logprobs"}:
                return False
            delta = choice.get("delta")
            if not isinstance(delta, dict) or set(delta) - {"tool_calls", "role", "content"} or delta.get("content"):
                return False
            calls = delta.get("tool_calls")
            if not calls:
                if choice.get("finish_reason") or calls not in (None, []):
                    return False
                continue  # an empty delta
            if not isinstance(calls, list):
                return False
            for d_no, tc in enumerate(calls):
                if not isinstance(tc, dict) or (isinstance(tc.get("id"), str) and tc["id"]):
                    return False
                key = (choice.get("index", 0), tc.get("index", d_no))
                if not all(map(_is_index, key)) or key not in self._late_keys:
                    return False
        return True

    @staticmethod
    def _name_pieces(event: SSEEvent) -> list[tuple[int, int, int | None, Any, Any, str]]:
        """Each call name (or piece) ``event`` carries: ``(choice position, call position or None
        for a legacy function_call, choice index, call index or "function_call", id, name)``."""
        data = event.json()
        choices = data.get("choices") if isinstance(data, dict) else None
        out: list[tuple[int, int, int | None, Any, Any, str]] = []
        for c_no, choice in enumerate(choices if isinstance(choices, list) else []):
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            calls = delta.get("tool_calls")
            for t_no, call in enumerate(calls if isinstance(calls, list) else []):
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    name = fn.get("name")
                    out.append((c_no, t_no, choice.get("index", 0), call.get("index", 0), call.get("id"), name))
            legacy = delta.get("function_call")
            if isinstance(legacy, dict):
                out.append((c_no, None, choice.get("index", 0), "function_call", None, legacy.get("name")))
        return out

    def _held_choices(self, held: list[SSEEvent]) -> set[Any]:
        """The choice indexes of the call name pieces in ``held``."""
        return {piece[2] for event in held for piece in self._name_pieces(event)}

    def _strict_alias_prefix(self, name: Any) -> bool:
        """``name`` (a string) begins an upstream alias of this flow and is not one, as written
        or read in another case and with other separators (the ladder reads a whole alias so:
        ``FILES_`` begins ``files_read_601e4eb6``)."""
        aliases = self._flow.plan.reverse_map
        if not isinstance(name, str) or not name or name in aliases:
            return False
        if any(a.startswith(name) for a in aliases):
            return True
        key = name_key(name)
        return bool(key) and any(len(k := name_key(a)) > len(key) and k.startswith(key) for a in aliases)

    def _join_split_names(self, held: list[SSEEvent], backs: list[str]) -> list[SSEEvent]:
        """``held`` (tool-call chunks let go) with each call's name that came in pieces across
        them and, joined, is an upstream alias of this flow, given back: the client's name in the
        first piece, no name in the later ones (as the repaired calls are written; a client joins
        the pieces), and added to ``backs``. A call is its choice's and index's pieces (or its
        legacy ``function_call``'s) up to a piece with another id; with an index that is not an
        integer nothing is joined."""
        if _odd_indices(held):
            return held
        groups: dict[tuple[Any, Any], list[list[Any]]] = {}  # (choice, index) -> calls: [id, pieces]
        for e_no, event in enumerate(held):
            for c_no, t_no, choice, index, new_id, name in self._name_pieces(event):
                runs = groups.setdefault((choice, index), [])
                if not runs or (isinstance(new_id, str) and runs[-1][0] not in (None, new_id)):
                    runs.append([new_id if isinstance(new_id, str) else None, []])
                elif isinstance(new_id, str):
                    runs[-1][0] = new_id
                if isinstance(name, str) and name:
                    runs[-1][1].append((e_no, c_no, t_no, name))
        edits: dict[int, list[tuple[int, int | None, str | None]]] = {}  # event -> (choice, call, name or drop)
        for runs in groups.values():
            for _, pieces in runs:
                if len(pieces) < 2 or any(self._alias_back({"name": p[3]}) is not None for p in pieces):
                    continue
                back = self._alias_back({"name": "".join(p[3] for p in pieces)})
                if back is None:
                    continue
                backs.append(back)
                for i, (e_no, c_no, t_no, _) in enumerate(pieces):
                    edits.setdefault(e_no, []).append((c_no, t_no, back if i == 0 else None))
        if not edits:
            return held
        out = list(held)
        for e_no, changes in edits.items():
            out[e_no] = self._renamed(held[e_no], changes)
        return out

    def _give_names_back(self, event: SSEEvent, backs: list[str]) -> bytes:
        """``event`` as it came but for each tool call's (or legacy ``function_call``'s) name that
        is an upstream alias of this flow, given back (:meth:`FlowContext.name_back`: only such a
        name, whole, is one; a piece of another name is not) and added to ``backs``."""
        changes: list[tuple[int, int | None, str | None]] = []
        for c_no, t_no, _, _, _, name in self._name_pieces(event):
            back = self._alias_back({"name": name})
            if back is not None:
                changes.append((c_no, t_no, back))
                backs.append(back)
        return self._renamed(event, changes).raw if changes else event.raw

    @staticmethod
    def _renamed(event: SSEEvent, changes: list[tuple[int, int | None, str | None]]) -> SSEEvent:
        """``event`` with each ``(choice position, call position or None for a legacy
        function_call, name)`` of ``changes`` applied: that call's name set, or removed (``None``)."""
        data = copy.deepcopy(event.json())
        for c_no, t_no, name in changes:
            delta = data["choices"][c_no]["delta"]
            fn = delta["function_call"] if t_no is None else delta["tool_calls"][t_no]["function"]
            if name is None:
                del fn["name"]
            else:
                fn["name"] = name
        return event.with_json(data)

    def _alias_back(self, fn: Any) -> str | None:
        """The client's name for ``fn["name"]`` when it is an upstream alias of this flow."""
        name = fn.get("name") if isinstance(fn, dict) else None
        back = self._flow.name_back(name) if isinstance(name, str) and name else None
        return back[0] if back is not None else None

    def on_event(self, event: SSEEvent) -> list[bytes]:
        """Hold from the first tool-call chunk to the end of the choice; pass the rest. A chunk
        that is not JSON while a call (or text that may be one) is held raises
        :class:`~toolvocab.dialects.sse.Unreadable`: the call cannot be read whole."""
        data = event.json()
        if data is None and event.data is not None and not _done(event) and self.has_held():
            raise Unreadable()
        if self._giving_back:
            return self._give_back_event(event)
        choices = data.get("choices") if isinstance(data, dict) else None
        if self._late_wait:
            if self._continues_held(event, choices):
                assert self._held is not None
                self._held.append(event)
                return []
            return self._release() + self.on_event(event)
        if not self._prose and isinstance(choices, list) and any(_other_choice(c) or _refuses(c) for c in choices):
            # Several choices (n > 1): their texts are not one text, and a call lifted from them
            # would land in one choice; none is lifted in this answer (the JSON path lifts each
            # choice's own). A refusal: what the model declined is prose, markup included. What
            # was held goes out as it came.
            out = [e.raw for e in self._hold.release()]
            self._settle()
            return out + self.on_event(event)
        has_calls = isinstance(choices, list) and any(
            isinstance(c, dict) and isinstance(c.get("delta"), dict) and c["delta"].get("tool_calls") for c in choices
        )
        if has_calls:
            self._prose = True  # real tool calls: text is only text (as in a JSON answer)
            self._with_calls.update(
                c.get("index", 0)
                for c in choices
                if isinstance(c, dict) and isinstance(c.get("delta"), dict) and c["delta"].get("tool_calls")
            )
        if self._legacy is not None:
            return self._on_legacy(event, choices)
        if (
            self._held is None
            and isinstance(choices, list)
            and any(
                isinstance(c, dict)
                and isinstance(c.get("delta"), dict)
                and isinstance(c["delta"].get("function_call"), dict)
                for c in choices
            )
        ):
            self._prose = True
            out = [e.raw for e in self._hold.release()]  # text before a call is text
            self._legacy = []
            self._open_legacy = set()
            return out + self._on_legacy(event, choices)
        if self._hold.held is not None:
            return self._on_text(event, choices, has_calls)
        if self._held is None and not has_calls and self._may_start_text_call(event, choices):
            return self._after_text(event, choices)
        if self._held is None:
            if not has_calls:
                return [self._finish_reason_fixed(event, choices)]
            if self._ended_calls and self._only_late(choices):
                # Deltas that continue calls whose choice's finish_reason came with them: those
                # calls went out as they were then; this goes as it came but for an alias whole
                # in it, given back (no id is added: a client joins it to the call it continues).
                backs: list[str] = []
                moved = self._moved_on(event, choices)
                out = [self._give_names_back(moved, backs)]
                self.unrepaired.append(
                    "a tool call's delta came after its choice's finish_reason"
                    + (", and went to the index its call went out at" if moved is not event else "")
                    + (NAMED_BACK + ", ".join(dict.fromkeys(backs)) if backs else "")
                )
                return out
            self._held = []
            self._open_calls = set()
        return _hold_to_end_of_choice(
            self._held,
            event,
            choices,
            self._release,
            self._open_calls,
            "tool_calls",
            self._await_late,
        )

    def _moved_on(self, event: SSEEvent, choices: list[Any]) -> SSEEvent:
        """``event`` (deltas of calls that went out at their choice's finish_reason) with each
        delta of a call that went out at another index (:attr:`_moved`) at that index, so that
        the client joins it to that call."""
        if not self._moved:
            return event
        new_choices, moved = [], False
        for c in choices:
            calls = c["delta"].get("tool_calls") if isinstance(c, dict) and isinstance(c.get("delta"), dict) else None
            if not isinstance(calls, list):
                new_choices.append(c)
                continue
            new_calls = []
            for d_no, tc in enumerate(calls):
                at = self._moved.get((c.get("index", 0), tc.get("index", d_no))) if isinstance(tc, dict) else None
                if at is not None:
                    tc, moved = {**tc, "index": at}, True
                new_calls.append(tc)
            new_choices.append({**c, "delta": {**c["delta"], "tool_calls": new_calls}})
        data = event.json()
        if not moved or not isinstance(data, dict):
            return event
        return event.with_json({**data, "choices": new_choices})

    def _only_late(self, choices: list[Any]) -> bool:
        """Every tool-call delta in ``choices`` continues (carries no ``id``) a call that went out
        at its choice's ``finish_reason`` (:attr:`_ended_calls`): nothing in it starts a call."""
        late = False
        for c in choices:
            delta = c.get("delta") if isinstance(c, dict) else None
            calls = delta.get("tool_calls") if isinstance(delta, dict) else None
            for d_no, tc in enumerate(calls if isinstance(calls, list) else ()):
                key = (c.get("index", 0), tc.get("index", d_no) if isinstance(tc, dict) else None)
                if not isinstance(tc, dict) or tc.get("id") or not all(map(_is_index, key)):
                    return False
                if key not in self._ended_calls:
                    return False
                late = True
        return late

    def at_end(self) -> list[bytes]:
        """End of stream: resolve what was held (the calls are as complete as they will get);
        held text goes out as it came (the stream ended before its choice did: never lifted),
        or lifted when its choice had ended naturally (:attr:`_ended`) and no unterminated last
        event follows (it may be a refusal or a citation, unread)."""
        lift = self._ended and self._parser.pending_blank
        out = self._release_text(final=True, lift=lift) if self._hold.held else []
        out += self._release_legacy() if self._legacy is not None else []
        if self._name_hold:  # giving back: a name that only began an alias, as it came
            held, self._name_hold = self._name_hold, None
            out += self._release_names(held)
        return out + (self._release() if self._held else [])

    # -- legacy function_call ------------------------------------------------------------------

    def _on_legacy(self, event: SSEEvent, choices: Any) -> list[bytes]:
        """Hold a legacy ``delta.function_call`` to the end of its choice, like tool calls."""
        assert self._legacy is not None
        return _hold_to_end_of_choice(
            self._legacy, event, choices, self._release_legacy, self._open_legacy, "function_call"
        )

    def _release_legacy(self) -> list[bytes]:
        """Assemble each choice's ``function_call`` (name and arguments concatenated, as the SDK
        does), resolve it as the JSON path does (:func:`_apply_function`: rename, fitted or
        empty arguments written as ``"{}"``) and, when it changes, send it whole in its first
        delta (later deltas lose their ``function_call``); else the chunks byte-identical."""
        held = self._legacy or []
        finish = _finish_reasons(held)
        parts: dict[Any, dict[str, Any]] = {}
        for event in held:
            data = event.json()
            for choice in as_list(data.get("choices")) if isinstance(data, dict) else ():
                delta = choice.get("delta") if isinstance(choice, dict) else None
                fc = delta.get("function_call") if isinstance(delta, dict) else None
                if not isinstance(fc, dict):
                    continue
                slot = parts.setdefault(choice.get("index", 0), {"name": "", "args": [], "has_args": False})
                if isinstance(fc.get("name"), str):
                    slot["name"] += fc["name"]
                if "arguments" in fc:
                    slot["args"].append(_args_text(fc["arguments"])[0])
                    slot["has_args"] = True
        new: dict[Any, dict[str, Any]] = {}
        for c, slot in parts.items():
            if not slot["name"]:
                continue
            fn: dict[str, Any] = {"name": slot["name"]}
            if slot["has_args"]:
                fn["arguments"] = "".join(slot["args"])
            if _apply_function(fn, self._resolve, None, truncated=_cut_off(finish.get(c))):
                new[c] = fn
        if not new:
            out = [e.raw for e in held]
        else:
            out = []
            placed: set[Any] = set()
            for event in held:
                data = event.json()
                if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
                    out.append(event.raw)
                    continue
                touched = False
                new_choices = []
                for choice in data["choices"]:
                    c = choice.get("index", 0) if isinstance(choice, dict) else None
                    delta = choice.get("delta") if isinstance(choice, dict) else None
                    if c in new and isinstance(delta, dict) and isinstance(delta.get("function_call"), dict):
                        touched = True
                        delta = dict(delta)
                        if c in placed:
                            delta.pop("function_call")
                        else:
                            delta["function_call"] = new[c]
                            placed.add(c)
                        choice = {**choice, "delta": delta}
                    new_choices.append(choice)
                out.append(event.with_json({**data, "choices": new_choices}).raw if touched else event.raw)
        self._legacy = None  # only now: if anything above raised, held() still has every byte
        return out

    # -- tool calls left in text (BR-23, BR-24) ------------------------------------------------

    def _may_start_text_call(self, event: SSEEvent, choices: Any) -> bool:
        """Add this chunk's content to what was said so far (:class:`textcalls.TextHold`); True
        when the text is still only a lead (whitespace, reasoning) followed by tool-call markup
        that has started — only then is the chunk held. Once the content is prose it is never
        held again: a lift needs the whole text to be markup."""
        if self._prose or self._flow.tools is None:
            return False
        chunk = _content_of(choices)
        if not chunk:
            return False
        state, _ = self._hold.add(chunk, event)  # not held unless MARKUP: the caller sends it
        if state == PROSE:
            self._settle()
        return state == MARKUP

    def _settle(self) -> None:
        """The answer's text is settled (prose, or lifted): no chunk is held for it again."""
        self._prose, self._hold, self._ended, self._tail_usage = True, textcalls.TextHold(), False, False

    def _on_text(self, event: SSEEvent, choices: Any, has_calls: bool) -> list[bytes]:
        if has_calls:
            # Real tool calls follow: the text was only text.
            return [e.raw for e in self._hold.release()] + self.on_event(event)
        chunk = _content_of(choices) if event.data is not None else ""
        if self._ended:
            # After the choice's natural end only the tail OpenAI's API sends may come before
            # the lift: one usage chunk, then [DONE] (or the close). Anything else — a comment or
            # keep-alive (a refusal may follow it, and pings would hold the lift past every
            # stall bound), more content, a choice's delta, an error of any shape, a second
            # usage chunk — leaves the text as it came, at once.
            self._hold.keep(event)
            if _done(event):
                return self._release_text(final=True, lift=True)
            if not self._tail_usage and event.data is not None and _usage_only(event.json()):
                self._tail_usage = True
                return []
            return self._release_text(final=True, lift=False)
        if not chunk:
            self._hold.keep(event)
            return [] if event.data is None else self._after_text(event, choices)
        state, out = self._hold.add(chunk, event)
        if state == PROSE:
            self._settle()
        if out:  # prose, or a reasoning block turned out to open the text: out as it came
            return [e.raw for e in out]
        return self._after_text(event, choices)

    def _after_text(self, event: SSEEvent, choices: Any) -> list[bytes]:
        state = self._hold.state
        if state != MARKUP:
            # Prose (never a lift), or a reasoning block turned out to open the text: release.
            return self._release_text(final=False, lift=False)
        reasons = (
            [c["finish_reason"] for c in choices if isinstance(c, dict) and c.get("finish_reason")]
            if isinstance(choices, list)
            else []
        )
        if reasons and all(_natural_end(r) for r in reasons):
            self._ended = True  # lifted at the stream's end (_ended), unless a later chunk says prose
            return []
        if not isinstance(choices, list) or not choices or reasons:
            # Lifted only at a proper end: a usage chunk or [DONE] with no finish_reason, or a
            # token-limit stop, may have cut the answer short (more prose, another call).
            return self._release_text(final=True, lift=False)
        return []  # markup only so far: hold to the end of the choice (prose may still follow)

    def _release_text(self, *, final: bool, lift: bool = True) -> list[bytes]:
        hold = self._hold
        held = hold.held or []
        lifted = lift_text_calls(hold.watch.text, self._flow, self._position) if lift else None
        if lifted is None:
            return [e.raw for e in hold.release()]
        remaining, entries = lifted
        # What remains (the reasoning block) minus what already went out before the hold.
        text = hold.remaining_after_release(remaining)
        self._position += len(entries)
        self._prose = True  # the answer's text is settled (the hold is dropped below, once written)
        out: list[bytes] = []
        first = True
        for event in held:
            data = event.json()
            choices = data.get("choices") if isinstance(data, dict) else None
            if not isinstance(choices, list) or not choices:
                out.append(event.raw)  # a comment, usage or [DONE]
                continue
            new_choices = []
            for choice in choices:
                delta = dict(choice.get("delta") or {}) if isinstance(choice, dict) else {}
                had_content = "content" in delta
                delta.pop("content", None)
                if first and had_content:
                    if text:
                        delta["content"] = text
                    delta["tool_calls"] = [{"index": i, **entry} for i, entry in enumerate(entries)]
                    first = False
                new_choice = {**choice, "delta": delta}
                if first is False and isinstance(choice, dict):
                    self._with_calls.add(choice.get("index", 0))
                if new_choice.get("finish_reason") == "stop":
                    new_choice["finish_reason"] = "tool_calls"
                new_choices.append(new_choice)
            if not any(c["delta"] or c.get("finish_reason") for c in new_choices) and not any(
                k not in _CHUNK_KEYS for k in data
            ):
                if data.get("usage") in (None, {}):
                    continue  # nothing left in this chunk
            out.append(event.with_json({**data, "choices": new_choices}).raw)
        # Only now: if anything above raised, held() still has every held chunk.
        self._settle()
        return out

    def _finish_reason_fixed(self, event: SSEEvent, choices: Any) -> bytes:
        """The event with ``finish_reason: "stop"`` turned into ``"tool_calls"`` for every choice
        that carried tool calls (streamed or lifted out of text); other reasons stay."""
        return self._fix_finish(event).raw

    def _fix_finish(self, event: SSEEvent) -> SSEEvent:
        data = event.json()
        choices = data.get("choices") if isinstance(data, dict) else None
        if not self._with_calls or not isinstance(choices, list):
            return event

        def stops(c: Any) -> bool:
            return isinstance(c, dict) and c.get("finish_reason") == "stop" and c.get("index", 0) in self._with_calls

        if not any(stops(c) for c in choices):
            return event
        fixed = [{**c, "finish_reason": "tool_calls"} if stops(c) else c for c in choices]
        return event.with_json({**data, "choices": fixed})

    def _release(self) -> list[bytes]:
        """The held calls assembled, decided and sent."""
        self._late_wait = False
        held = self._held or []
        if not held:
            self._held = None
            return []
        if _odd_indices(held):
            # A choice or tool-call index that is not an integer: the calls cannot be told apart
            # with certainty, so the block goes out as it came but for a name that is an upstream
            # alias of this flow, whole in one delta, given back.
            backs: list[str] = []
            out = [self._give_names_back(e, backs) for e in held]
            self._held = None
            self.unrepaired.append(
                "a choice or tool-call index is not an integer, so the tool calls cannot be told apart"
                + (NAMED_BACK + ", ".join(dict.fromkeys(backs)) if backs else "")
            )
            return out
        slots = self._assemble(held)
        finish = _finish_reasons(held)
        self._ended_calls.update(
            (slot.choice, slot.index) for slot in slots if finish.get(slot.choice) and not slot.late
        )
        if self._ambiguous:
            # Read as two calls, a name piece could become a call of its own (``files_read_``
            # folded to ``files.read`` with no arguments); read as one, another call's name
            # could join it. Either reading is a guess: the block goes out as it came, but for
            # a name that is an upstream alias of this flow given back where one call's pieces
            # (up to another id) spell it (another call's in the block too).
            backs: list[str] = []
            out = [self._give_names_back(e, backs) for e in self._join_split_names(held, backs)]
            self._held = None
            self.unrepaired.append(
                "a tool call's name continued under another id at the same index before its arguments "
                "were whole, so its calls cannot be told apart"
                + (NAMED_BACK + ", ".join(dict.fromkeys(backs)) if backs else "")
            )
            return out
        updates: dict[int, dict[str, Any]] = {}
        for slot in slots:
            updates[id(slot)] = self._decide(slot, truncated=_cut_off(finish.get(slot.choice)))
        if not any(u["rewrite"] for u in updates.values()):
            out = [e.raw for e in held]
        else:
            out = self._rebuild(held, slots, updates)
        # "stop" on a choice that carried tool calls becomes "tool_calls" (same framing).
        for i, event in enumerate(held):
            if self._fix_finish(event) is not event:
                source = event if out[i] == event.raw else SSEEvent.parse(out[i])
                out[i] = self._fix_finish(source).raw
        self._held = None  # only now: if anything above raised, held() still has every byte
        return out

    def _assemble(self, held: list[SSEEvent]) -> list[_Slot]:
        """The tool calls of ``held``, one :class:`_Slot` each, in order; sets ``_ambiguous``
        when a piece under another id may be a second call or the rest of a name."""
        self._ambiguous = False
        slots: list[_Slot] = []
        current: dict[tuple[int, int], _Slot] = {}
        used_out: dict[int, set[int]] = {}
        self._routes: dict[tuple[int, int, int], _Slot] = {}
        for e_no, event in enumerate(held):
            data = event.json()
            if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
                continue  # a comment or keep-alive held in place
            for choice in data["choices"]:
                if not isinstance(choice, dict) or not isinstance(choice.get("delta"), dict):
                    continue
                c = choice.get("index", 0)
                for d_no, tc in enumerate(choice["delta"].get("tool_calls") or ()):
                    if not isinstance(tc, dict):
                        continue
                    idx = tc.get("index", d_no)
                    fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
                    tc_id = tc.get("id")
                    name = fn.get("name")
                    slot = current.get((c, idx))
                    if (
                        slot is not None
                        and isinstance(tc_id, str)
                        and tc_id
                        and slot.id
                        and tc_id != slot.id
                        and isinstance(name, str)
                        and name
                        and slot.name
                    ):
                        if _complete_json("".join(slot.fragments)):
                            # A second call reusing the index with its own id and name.
                            slot.needs_normalize = True
                            slot = None
                        elif name != slot.name:
                            # Another id and name before the call's arguments are whole: a second
                            # call, or the rest of this one's name (clients join the pieces, keep
                            # the first or the last): which is not known.
                            self._ambiguous = True
                    if slot is None:
                        taken = used_out.setdefault(c, set())
                        out_index = idx if idx not in taken else max(taken) + 1
                        slot = _Slot(c, idx, out_index)
                        slot.late = not (isinstance(tc_id, str) and tc_id) and (c, idx) in self._ended_calls
                        if out_index != idx:
                            slot.needs_normalize = True
                        taken.add(out_index)
                        slot.first_seen = (e_no, d_no)
                        current[(c, idx)] = slot
                        slots.append(slot)
                    self._routes[(e_no, c, d_no)] = slot
                    if isinstance(tc_id, str) and tc_id:
                        if slot.id is None:
                            slot.id = tc_id
                            if (e_no, d_no) != slot.first_seen:
                                slot.needs_normalize = True  # id arrived late
                        elif tc_id != slot.id:
                            slot.needs_normalize = True  # a new id on a fragment
                    if isinstance(tc.get("type"), str) and slot.type is None:
                        slot.type = tc["type"]
                    if isinstance(name, str):
                        slot.named = True
                    if name == "" and slot.name:
                        slot.needs_normalize = True  # "name": "" after the first: send the name once
                    if isinstance(name, str) and name:
                        if not slot.name:
                            slot.name = name
                        elif name == slot.name:
                            slot.needs_normalize = True  # the whole name repeated
                        else:
                            slot.name += name
                            slot.needs_normalize = True  # the name split across chunks
                        slot.name_parts += 1
                    if "arguments" in fn:
                        text, was_object = _args_text(fn.get("arguments"))
                        if was_object:
                            slot.was_object = True
                            slot.needs_normalize = True
                        slot.fragments.append(text)
        return slots

    def _decide(self, slot: _Slot, *, truncated: bool = False) -> dict[str, Any]:
        if slot.late:
            # the rest of a call that went out at its choice's finish_reason: as it came (an id
            # added would be joined to the call's by the client)
            self.unrepaired.append("a tool call's delta came after its choice's finish_reason")
            return {"rewrite": False, "id": None, "name": "", "args": None}
        if not slot.named:
            # Deltas of a call whose first chunk never came as JSON (it went on as sent): no
            # delta carried its name, so the call is not known whole and goes on as it came,
            # undecided (an "id" or "type" repeated on every delta does not make it known; a
            # name sent empty is a blank name, decided as such).
            self.unrepaired.append(
                "a streamed tool call's deltas came without its name, so the call is not known whole"
            )
            return {"rewrite": False, "id": None, "name": "", "args": None}
        position = self._position
        self._position += 1
        final_id = slot.id
        if not final_id or final_id in self._seen_ids:
            final_id = stable_call_id(self._flow.flow_key, position)
            slot.needs_normalize = True
        self._seen_ids.add(final_id)
        text = "".join(slot.fragments)
        if slot.type != "custom":
            expanded = _expand_parallel(
                {"id": final_id, "type": "function", "function": {"name": slot.name, "arguments": text}}, self._flow
            )
            if expanded is not None:  # BR-08: the wrapper goes out as its calls
                for entry in expanded:
                    # <wrapper id>_<i> (call_<i> without one) may be an id the answer has
                    if entry["id"] in self._seen_ids:
                        entry["id"] = stable_call_id(self._flow.flow_key, self._position)
                        self._position += 1
                    self._seen_ids.add(entry["id"])
                return {"rewrite": True, "id": final_id, "name": slot.name, "args": None, "expand": expanded}
        if slot.type == "custom":
            call = ToolCall(name=slot.name, raw_arguments=text, id=final_id, kind=ToolKind.FREEFORM)
        else:
            # "" / null / [] in all fragments together is an empty form; no fragment: no arguments
            call = ToolCall.read(slot.name, text if slot.fragments else ABSENT, call_id=final_id)
        if truncated:
            call = call.model_copy(update={"truncated": True})
        decision = self._resolve(call)
        name = slot.name
        new_args: str | None = None
        if decision.changed:
            name = apply_decision_name(decision) or slot.name
            if decision.arguments_after is not None:
                new_args = jsonio.dumps(decision.arguments_after).decode()
        return {
            "rewrite": decision.changed or slot.needs_normalize,
            "id": final_id,
            "name": name,
            "args": new_args,
        }

    def _rebuild(self, held: list[SSEEvent], slots: list[_Slot], updates: dict[int, dict[str, Any]]) -> list[bytes]:
        out: list[bytes] = []
        started: set[int] = set()
        args_sent: set[int] = set()
        # A wrapper's calls take its place, in order, and every later call of its choice moves
        # up by as many: a client keeps a choice's calls by index (the openai SDK's stream helper
        # in a list it extends one index at a time).
        at: dict[int, int] = {}  # id(slot) -> the index it goes out at
        moved: dict[int, int] = {}  # choice -> places the wrappers so far add
        for slot in sorted(slots, key=lambda s: s.out_index):
            update = updates[id(slot)]
            at[id(slot)] = slot.out_index + moved.get(slot.choice, 0)
            if update["rewrite"] and update.get("expand") is not None:
                moved[slot.choice] = moved.get(slot.choice, 0) + len(update["expand"]) - 1
            if at[id(slot)] != slot.out_index:
                self._moved[(slot.choice, slot.index)] = at[id(slot)]
        for e_no, event in enumerate(held):
            data = event.json()
            if not isinstance(data, dict):
                out.append(event.raw)
                continue
            touched = False
            new_choices = []
            for choice in as_list(data.get("choices")):
                if (
                    not isinstance(choice, dict)
                    or not isinstance(choice.get("delta"), dict)
                    or not choice["delta"].get("tool_calls")
                ):
                    new_choices.append(choice)
                    continue
                c = choice.get("index", 0)
                new_calls = []
                for d_no, tc in enumerate(choice["delta"]["tool_calls"]):
                    slot = self._routes.get((e_no, c, d_no))
                    if slot is None:
                        new_calls.append(tc)
                        continue
                    update = updates[id(slot)]
                    if not update["rewrite"]:
                        if at[id(slot)] != slot.out_index:  # moved up past a wrapper's calls
                            touched = True
                            tc = {**tc, "index": at[id(slot)]}
                        new_calls.append(tc)
                        continue
                    touched = True
                    fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
                    piece = None
                    if "arguments" in fn:
                        piece, _ = _args_text(fn.get("arguments"))
                    if update["args"] is not None:
                        piece = update["args"] if id(slot) not in args_sent else None
                        if piece is not None:
                            args_sent.add(id(slot))
                    if update.get("expand") is not None:
                        if id(slot) not in started:
                            started.add(id(slot))
                            for k, sub in enumerate(update["expand"]):
                                new_calls.append({"index": at[id(slot)] + k, **sub})
                        continue
                    if id(slot) not in started:
                        started.add(id(slot))
                        entry: dict[str, Any] = {
                            "index": at[id(slot)],
                            "id": update["id"],
                            "type": slot.type or "function",
                        }
                        if slot.type == "custom":
                            entry["custom"] = {"name": update["name"], "input": piece or ""}
                        else:
                            entry["function"] = {"name": update["name"], "arguments": piece or ""}
                        new_calls.append(entry)
                    elif piece:
                        key = "custom" if slot.type == "custom" else "function"
                        field = "input" if slot.type == "custom" else "arguments"
                        new_calls.append({"index": at[id(slot)], key: {field: piece}})
                delta = dict(choice["delta"])
                if new_calls:
                    delta["tool_calls"] = new_calls
                else:
                    delta.pop("tool_calls", None)
                new_choices.append({**choice, "delta": delta})
            if touched:
                out.append(event.with_json({**data, "choices": new_choices}).raw)
            else:
                out.append(event.raw)
        return out


DIALECT = OpenAIChat()
