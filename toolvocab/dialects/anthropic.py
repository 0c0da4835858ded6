"""Anthropic Messages (``POST /v1/messages``): where tool names live, requests and answers.

Shapes from the Messages API reference and the ``anthropic`` Python SDK 2.x types
(``types/tool_param.py``, ``tool_union_param.py``, ``raw_content_block_start_event.py``,
``tool_reference_block_param.py``); the streaming sequence from the "Streaming Messages" doc:
``message_start``, then per block ``content_block_start`` / ``content_block_delta``* /
``content_block_stop``, then ``message_delta``, ``message_stop``, with ``ping`` and ``error``
anywhere. In a stream a tool name appears only in ``content_block_start``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import msgspec

from toolvocab.dialects import textcalls
from toolvocab.dialects.base import JSON
from toolvocab.dialects.base import NAMED_BACK
from toolvocab.dialects.base import CallIds
from toolvocab.dialects.base import FlowContext
from toolvocab.dialects.base import Peek
from toolvocab.dialects.base import Resolver
from toolvocab.dialects.base import apply_decision_name
from toolvocab.dialects.base import as_list
from toolvocab.dialects.base import content_texts
from toolvocab.dialects.base import dedupe_tools
from toolvocab.dialects.base import mark_repeats
from toolvocab.dialects.base import object_arguments_call
from toolvocab.dialects.base import path_only
from toolvocab.dialects.base import present
from toolvocab.dialects.base import sections_of
from toolvocab.dialects.base import typed_decode
from toolvocab.dialects.sse import EventStreamRewriter
from toolvocab.dialects.sse import SSEEvent
from toolvocab.dialects.sse import Unreadable
from toolvocab.dialects.sse import data_line_json
from toolvocab.engine import jsonio
from toolvocab.engine.errors import OPENCODE_INVALID_TOOL
from toolvocab.engine.errors import ToolResult
from toolvocab.engine.ids import anthropic_accepts_all
from toolvocab.engine.ids import id_aliases
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.names import join_namespace
from toolvocab.engine.plan import Plan
from toolvocab.engine.wrapped import PARALLEL_WRAPPER

#: ``stop_reason`` values after which a text block may be lifted: the model ended its turn itself
#: (``end_turn``; ``tool_use`` from a gateway that saw the call but left it in the text). Any other
#: — ``max_tokens``, ``stop_sequence``, ``refusal``, ``pause_turn`` — may have cut the text short or
#: withheld what followed (Messages API docs, "Handling stop reasons"): the text stays text.
_LIFT_REASONS = frozenset({"end_turn", "tool_use"})


def _natural_end(stop_reason: object) -> bool:
    """True for a ``stop_reason`` after which a text block may be lifted (:data:`_LIFT_REASONS`);
    a value of another JSON type (a list, an object) is none, and never raises."""
    return isinstance(stop_reason, str) and stop_reason in _LIFT_REASONS


#: Bedrock's streamed invoke (:meth:`AnthropicMessages.answers_unread`).
_UNREAD_STREAM = re.compile(r"/model/[^/?]+/invoke-with-response-stream$")
_PATH = re.compile(
    r"(?:/messages|/publishers/anthropic/models/[^/:?]+:(?:stream)?[rR]awPredict|/model/[^/?]+/invoke(?:-with-response-stream)?)$"
)


class _Block(msgspec.Struct, gc=False):
    """A content block as the peek reads it: ``input``, ``text`` and a result's ``content``
    skipped (a ``role: "system"`` message's blocks are read whole: :meth:`AnthropicMessages.peek`)."""

    type: Any = msgspec.UNSET
    name: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    tool_use_id: Any = msgspec.UNSET


class _Message(msgspec.Struct, gc=False):
    role: Any = msgspec.UNSET
    content: str | list[_Block] | msgspec.UnsetType = msgspec.UNSET


class _Request(msgspec.Struct, gc=False):
    """The keys the request readers read (:meth:`AnthropicMessages.peek`)."""

    model: Any = msgspec.UNSET
    stream: Any = msgspec.UNSET
    system: Any = msgspec.UNSET
    messages: list[_Message] | msgspec.UnsetType = msgspec.UNSET
    tools: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    stop_sequences: Any = msgspec.UNSET
    tool_choice: Any = msgspec.UNSET


_PEEK = msgspec.json.Decoder(_Request)


class AnthropicMessages:
    """The Anthropic Messages dialect (first-party, Vertex ``rawPredict`` and Bedrock paths)."""

    name = "anthropic"

    def path_matches(self, method: str, path: str) -> bool:
        """POST to ``…/messages`` (or the Vertex/Bedrock equivalents)."""
        return method == "POST" and _PATH.search(path_only(path)) is not None

    def matches(self, method: str, path: str, body: JSON) -> bool:
        """POST to ``…/messages`` (or the Vertex/Bedrock equivalents) with a ``messages`` list."""
        return isinstance(body, dict) and isinstance(body.get("messages"), list) and self.path_matches(method, path)

    def peek(self, method: str, path: str, content: bytes) -> Peek | None:
        """``model``, ``stream``, ``system``, and of ``messages`` each role and the ``type``,
        ``name``, ``id`` and ``tool_use_id`` of its blocks, and the text of a ``role: "system"``
        message that is a string; ``tools`` as sent. ``None`` for a body with a replayed id the
        upstream rejects (only the whole read aliases ids), and for one with a ``role: "system"``
        message of blocks (a gateway's shape, not the Messages API's: read whole)."""
        request = typed_decode(_PEEK, content) if self.path_matches(method, path) else None
        if request is None or request.messages is msgspec.UNSET:
            return None
        small = present(request, "model", "stream", "system")
        texts = content_texts(small.get("system"))
        names: list[str] = []
        ids: list[str] = []  # joined and matched once (anthropic_accepts_all): their order is free
        # One loop over the messages and their blocks (a 2 MB transcript holds some 2,000): it
        # measured faster than five comprehensions, one a question (docs/performance.md).
        for message in request.messages:
            blocks = message.content
            if type(blocks) is not list:
                if type(blocks) is str and message.role == "system":
                    texts.append(blocks)
                continue
            if message.role == "system":
                return None
            for block in blocks:
                kind = block.type
                if kind == "tool_use":
                    if type(block.name) is str:
                        names.append(block.name)
                    if type(block.id) is str:
                        ids.append(block.id)
                elif kind == "tool_result" and type(block.tool_use_id) is str:
                    ids.append(block.tool_use_id)
        if not anthropic_accepts_all(ids):
            return None
        return Peek(
            self.model_of(path, small),
            self.wants_stream(path, small),
            texts,
            texts,
            names,
            sections_of(request, "tools"),
            stops=self.stop_sequences(present(request, "stop_sequences")),
            limited=self.limits_calls(choice := present(request, "tool_choice")),
            allowed=self.allowed_names(choice),
        )

    # -- request ------------------------------------------------------------------------------

    def declared_tools(self, body: JSON) -> list[DeclaredTool]:
        """Client tools are ``function``; any named tool whose ``type`` is set and is not
        ``custom`` (``bash_20250124``, ``text_editor_*``, ``web_search_*``…) is ``provider`` and
        its fixed name is never touched. Nameless entries (``mcp_toolset``) are not listed."""
        out: list[DeclaredTool] = []
        raws: list[Any] = []
        tools = body.get("tools")
        for tool in tools if isinstance(tools, list) else ():
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            kind_field = tool.get("type")
            kind = ToolKind.FUNCTION if kind_field in (None, "custom") else ToolKind.PROVIDER
            schema = tool.get("input_schema")
            desc = tool.get("description")
            out.append(
                DeclaredTool(
                    name=tool["name"],
                    kind=kind,
                    input_schema=schema if isinstance(schema, dict) else None,
                    description=desc if isinstance(desc, str) else None,
                )
            )
            raws.append(tool)
        return mark_repeats(out, raws)

    def declarations(self, body: JSON) -> JSON:
        """``body["tools"]``: all that :meth:`declared_tools` reads."""
        return body.get("tools") if isinstance(body, dict) else None

    def transcript_names(self, body: JSON) -> list[str]:
        """Names of the earlier calls replayed in ``messages`` (``tool_use.name``)."""
        names: list[str] = []
        for message in as_list(body.get("messages")):
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                    names.append(block["name"])
        return names

    def transcript_calls(self, body: JSON, keep: Callable[[str], bool] | None = None) -> list[tuple[str, Any]] | None:
        """``(name, input)`` of each ``tool_use`` block of an assistant message in ``messages``, in
        order (with ``keep``, of those whose name it accepts): the calls the model made, which the
        client replays in the assistant's turns. A command the user ran in Claude Code's bash mode
        (``!cd sub``), which reaches the model as user text in ``<bash-input>`` tags and runs where
        ``Bash`` runs, counts as a ``Bash`` call (an unclosed tag: the rest of the text). ``None``
        when a user text holds Claude Code's compaction summary (:data:`_COMPACTED`), or a message
        a ``compaction`` block (the API's own context compaction, ``compact_20260112``: the block
        stands for the turns it summarized): the calls before it are not in the request.

        One pass over the blocks (a 200 KB transcript is read at each answer that moves a shell
        command: ``FlowState.earlier``)."""
        out: list[tuple[str, Any]] = []
        messages = body.get("messages") if isinstance(body, dict) else None
        for message in messages if isinstance(messages, list) else ():
            if not isinstance(message, dict):
                continue
            role, content = message.get("role"), message.get("content")
            texts: list[str] = [content] if role == "user" and isinstance(content, str) else []
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "compaction":
                    return None
                if role == "assistant":
                    if (
                        kind == "tool_use"
                        and isinstance(name := block.get("name"), str)
                        and (keep is None or keep(name))
                    ):
                        out.append((name, block.get("input")))
                elif role == "user" and kind == "text" and isinstance(text := block.get("text"), str):
                    texts.append(text)
            for text in texts:
                if _COMPACTED in text:
                    return None
                if _BASH_INPUT in text and (keep is None or keep("Bash")):
                    out += [("Bash", {"command": command}) for command in _bash_inputs(text)]
        return out

    def tool_results(self, body: JSON) -> list[ToolResult]:
        """Every ``tool_result`` block in ``messages``, in order.

        Text is the content string or its text blocks joined by newlines; ``is_error`` is the
        block's flag (``None`` when absent); the name comes from the ``tool_use`` with the same
        id earlier in the transcript. A result of OpenCode's ``invalid`` sink (a ``tool_use``
        named ``invalid`` with ``{"tool", "error"}`` input) is an error whatever its flag says:
        the sink "succeeds" by returning the error text.
        """
        results: list[ToolResult] = []
        calls: dict[str, tuple[str | None, bool]] = {}
        messages = body.get("messages") if isinstance(body, dict) else None
        for message in messages if isinstance(messages, list) else ():
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "tool_use" and isinstance(block.get("id"), str):
                    name = block.get("name") if isinstance(block.get("name"), str) else None
                    calls[block["id"]] = (name, _is_invalid_sink(name, block.get("input")))
                elif kind == "tool_result":
                    call_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else None
                    name, sink = calls.get(call_id, (None, False)) if call_id is not None else (None, False)
                    flag = block.get("is_error")
                    results.append(
                        ToolResult(
                            call_id=call_id,
                            name=name,
                            text="\n".join(content_texts(block.get("content"))),
                            is_error=True if sink else (flag if isinstance(flag, bool) else None),
                        )
                    )
        return results

    def model_of(self, path: str, body: JSON) -> str | None:
        """``model`` from the body, or from a Vertex / Bedrock path."""
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            return body["model"]
        m = re.search(r"/models?/([^/:?]+)", path_only(path))
        return m.group(1) if m else None

    def platform_texts(self, body: JSON) -> list[str]:
        """The system texts (where this agent family describes its machine)."""
        return self.system_texts(body)

    def system_texts(self, body: JSON) -> list[str]:
        """``system`` (string or text blocks) and every ``role: "system"`` message's text."""
        texts = content_texts(body.get("system"))
        for message in as_list(body.get("messages")):
            if isinstance(message, dict) and message.get("role") == "system":
                texts += content_texts(message.get("content"))
        return texts

    def apply_request(self, body: JSON, plan: Plan) -> bool:
        """Rename per ``plan.rename_map`` in ``tools[].name`` (client tools only),
        ``tool_choice.name``, transcript ``tool_use.name`` and ``tool_reference.tool_name``
        inside ``tool_result`` content; add the prompt sentence to ``system``."""
        changed = False
        rename = plan.rename_map
        tools = body.get("tools") if isinstance(body.get("tools"), list) else []
        provider = {
            t.get("name")
            for t in tools
            if isinstance(t, dict) and t.get("type") not in (None, "custom") and isinstance(t.get("name"), str)
        }
        rename = {k: v for k, v in rename.items() if k not in provider}
        changed |= dedupe_tools(
            tools,
            plan,
            lambda t: t["name"] if isinstance(t, dict) and isinstance(t.get("name"), str) else None,
            lambda t, alias: t.__setitem__("name", alias) if t.get("type") in (None, "custom") else None,
        )
        if rename:
            for tool in tools:
                if isinstance(tool, dict) and tool.get("type") in (None, "custom"):
                    changed |= _rename_key(tool, "name", rename)
            choice = body.get("tool_choice")
            if isinstance(choice, dict) and choice.get("type") == "tool":
                changed |= _rename_key(choice, "name", rename)
            for message in as_list(body.get("messages")):
                content = message.get("content") if isinstance(message, dict) else None
                if not isinstance(content, list):
                    continue
                for block in content:
                    if not isinstance(block, dict):
                        continue
                    if block.get("type") == "tool_use":
                        changed |= _rename_key(block, "name", rename)
                    elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                        for inner in block["content"]:
                            if isinstance(inner, dict) and inner.get("type") == "tool_reference":
                                changed |= _rename_key(inner, "tool_name", rename)
                    elif block.get("type") == "tool_search_tool_result":
                        changed |= _rename_references(block, rename)
        if plan.prompt_sentence:
            system = body.get("system")
            if system is None or system == "":
                body["system"] = plan.prompt_sentence
            elif isinstance(system, str):
                body["system"] = system + "\n\n" + plan.prompt_sentence
            elif isinstance(system, list):
                system.append({"type": "text", "text": plan.prompt_sentence})
            else:
                return changed
            changed = True
        return changed

    def request_heads(self, body: JSON, plan: Plan) -> dict[str, int]:
        """``{}``: each list this dialect's plan changes is written whole."""
        return {}

    def request_keys(self, body: JSON, plan: Plan, aliases: dict[str, str] | None = None) -> frozenset[str] | None:
        """``tools`` and ``tool_choice``; ``messages`` when names are renamed (earlier
        ``tool_use`` blocks, ``tool_reference``) or a replayed id is aliased (``aliases``, else
        :meth:`call_id_aliases`); ``system`` for the prompt sentence."""
        keys = {"tools", "tool_choice"}
        if plan.rename_map or (self.call_id_aliases(body) if aliases is None else aliases):
            keys.add("messages")
        if plan.prompt_sentence:
            keys.add("system")
        return frozenset(keys)

    # -- response -----------------------------------------------------------------------------

    def call_id_aliases(self, body: JSON) -> dict[str, str]:
        """Replayed ``tool_use.id`` / ``tool_result.tool_use_id`` the upstream rejects -> alias
        (``Dialect.call_id_aliases``). Anthropic checks ``tool_use.id`` against
        ``^[a-zA-Z0-9_-]+$`` (maximhq/bifrost#5097)."""
        return id_aliases(_replayed_ids(body))

    def alias_call_ids(self, body: JSON, aliases: dict[str, str] | None = None) -> dict[str, str]:
        """Send the replayed ids the upstream rejects as their aliases (``aliases``, else
        :meth:`call_id_aliases`), in place (``Dialect.alias_call_ids``); a pair keeps pairing
        because both ends get the same alias."""
        if aliases is None:
            aliases = self.call_id_aliases(body)
        for block, key in _id_blocks(body) if aliases else ():
            if block[key] in aliases:
                block[key] = aliases[block[key]]
        return aliases

    def rewrite_response(self, body: JSON, flow: FlowContext) -> bool:
        """Resolve every ``tool_use`` block of a JSON ``message`` and rewrite name and input; a
        ``multi_tool_use.parallel`` block becomes its calls (BR-08); a message without
        ``tool_use`` whose one non-blank text block is nothing but tool-call markup gets that
        block lifted into ``tool_use`` blocks (:func:`lift_text_block`), ``stop_reason``
        ``end_turn`` becoming ``tool_use``."""
        if not isinstance(body, dict) or not isinstance(body.get("content"), list):
            return False
        changed = False
        ids, resolve = flow.ids(), flow.resolve
        content: list[Any] = []
        for block in body["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                new_id = ids.fix(block.get("id"))
                if new_id is not None:
                    block["id"] = new_id
                    changed = True
                expanded = _expand_parallel_block(block, flow, ids)
                if expanded is not None:
                    content.extend(expanded)
                    changed = True
                    continue
                # Any stop but the model's own end (max_tokens, refusal, pause_turn,
                # model_context_window_exceeded…) may have cut the answer inside its last block,
                # whose input is then never completed.
                cut = not _natural_end(body.get("stop_reason")) and block is body["content"][-1]
                changed |= _apply_block(block, resolve, truncated=cut)
            elif isinstance(block, dict) and block.get("type") == "tool_search_tool_result":
                changed |= _name_references_back(block, flow.plan)
            content.append(block)
        if changed:
            body["content"] = content
        lifted = lift_text_block(content, flow, ids) if _natural_end(body.get("stop_reason")) else None
        if lifted is not None:
            index, blocks = lifted
            body["content"] = content[:index] + blocks + content[index + 1 :]
            if body.get("stop_reason") == "end_turn":
                body["stop_reason"] = "tool_use"
            changed = True
        return changed

    def answer_may_change(self, raw: bytes) -> bool:
        """True when ``raw`` (a JSON answer's bytes) holds ``tool_use`` (the only block type
        :meth:`rewrite_response` changes; ``server_tool_use`` and ``mcp_tool_use`` hold it too),
        ``tool_search_tool_result`` (whose references name tools) or what may be markup
        (:func:`textcalls.may_hold_markup_json`, which counts any ``\\u`` escape: one could spell
        either type). False: nothing in it to read."""
        return b"tool_use" in raw or b"tool_search_tool_result" in raw or textcalls.may_hold_markup_json(raw)

    def wants_stream(self, path: str, body: JSON) -> bool:
        """``"stream": true`` in the request body."""
        return isinstance(body, dict) and body.get("stream") is True

    def answers_unread(self, path: str, body: JSON) -> str | None:
        """Bedrock's ``…/invoke-with-response-stream`` answers in AWS event-stream frames
        (``application/vnd.amazon.eventstream``: binary, each event's JSON base64-encoded in a
        frame with its own CRCs; Amazon Bedrock API Reference, InvokeModelWithResponseStream),
        which toolvocab does not parse."""
        if _UNREAD_STREAM.search(path_only(path)):
            return "Bedrock's invoke-with-response-stream answers in AWS event-stream frames, which toolvocab does not read"
        return None

    def keeps_answer(self, body: JSON) -> bool:
        """False: no request of this API continues from a kept answer by its id."""
        return False

    def stop_sequences(self, body: JSON) -> bool:
        """A non-empty ``stop_sequences``. Anthropic says ``stop_reason`` ``stop_sequence`` for an
        end at one, but Messages-compatible servers in front of other models report it as
        ``end_turn`` (vLLM's ``/v1/messages`` maps its ``stop`` finish to ``end_turn``)."""
        stops = body.get("stop_sequences") if isinstance(body, dict) else None
        return isinstance(stops, list) and bool(stops)

    def limits_calls(self, body: JSON) -> bool:
        """A ``tool_choice`` other than ``{"type": "auto"}`` or ``{"type": "any"}`` (absent or
        ``null``: auto): ``none``, ``tool`` (one named tool), a value of another shape, or one with
        ``disable_parallel_tool_use`` set ("at most one tool use": markup may hold several)
        (Messages API reference, ``tool_choice``)."""
        choice = body.get("tool_choice") if isinstance(body, dict) else None
        if choice is None:
            return False
        return not (
            isinstance(choice, dict)
            and choice.get("type") in ("auto", "any")
            and choice.get("disable_parallel_tool_use") in (None, False)
        )

    def allowed_names(self, body: JSON) -> frozenset[str] | None:
        """Every tool for a ``tool_choice`` absent, ``null``, ``auto`` or ``any``; the one
        ``{"type": "tool", "name": …}`` names; none for ``none`` or a value of another shape
        (Messages API reference, ``tool_choice``)."""
        choice = body.get("tool_choice") if isinstance(body, dict) else None
        if choice is None:
            return None
        if isinstance(choice, dict):
            if choice.get("type") in ("auto", "any"):
                return None
            if choice.get("type") == "tool" and isinstance(choice.get("name"), str):
                return frozenset({choice["name"]})
        return frozenset()

    def stream_rewriter(self, flow: FlowContext) -> AnthropicStream:
        """A fresh :class:`AnthropicStream` for one flow."""
        return AnthropicStream(flow)


def _id_blocks(body: JSON) -> list[tuple[dict[str, Any], str]]:
    """Every replayed ``(block, key)`` holding a client tool-call id in ``messages``:
    ``tool_use.id`` and ``tool_result.tool_use_id``."""
    out: list[tuple[dict[str, Any], str]] = []
    for message in as_list(body.get("messages") if isinstance(body, dict) else None):
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                out.append((block, "id"))
            elif block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                out.append((block, "tool_use_id"))
    return out


def _replayed_ids(body: JSON) -> list[str]:
    """The ids of :func:`_id_blocks`, in order, read in one pass that builds no pairs."""
    out: list[str] = []
    for message in as_list(body.get("messages") if isinstance(body, dict) else None):
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                value = block.get("id")
            elif kind == "tool_result":
                value = block.get("tool_use_id")
            else:
                continue
            if isinstance(value, str):
                out.append(value)
    return out


def _is_invalid_sink(name: Any, arguments: Any) -> bool:
    """True for OpenCode's rewritten call: tool ``invalid`` with ``{"tool", "error"}``."""
    return (
        name == OPENCODE_INVALID_TOOL and isinstance(arguments, dict) and "tool" in arguments and "error" in arguments
    )


def _rename_key(obj: dict[str, Any], key: str, rename: dict[str, str]) -> bool:
    value = obj.get(key)
    if isinstance(value, str) and value in rename:
        obj[key] = rename[value]
        return True
    return False


def _input_deltas(held: list[SSEEvent]) -> tuple[list[str], set[int]]:
    """The ``partial_json`` fragments of the held ``tool_use`` block's own ``input_json_delta``
    events, and their positions in ``held``."""
    index = held[0].json().get("index")
    fragments: list[str] = []
    positions: set[int] = set()  # a set: tested per event
    for i, event in enumerate(held[1:-1], start=1):
        data = event.json()
        if (
            isinstance(data, dict)
            and data.get("type") == "content_block_delta"
            and data.get("index") == index
            and isinstance(data.get("delta"), dict)
            and data["delta"].get("type") == "input_json_delta"
        ):
            fragments.append(str(data["delta"].get("partial_json", "")))
            positions.add(i)
    return fragments, positions


def _empty_form_input(held: list[SSEEvent]) -> bool:
    """True when the held ``tool_use`` block's input is an empty form: ``null``, ``""`` or
    ``[]`` in its start and no fragment, or fragments spelling one of those (``{}`` is the normal
    wire form of an empty input; anything else is not empty)."""
    text = "".join(_input_deltas(held)[0])
    if text.strip():
        try:
            value = jsonio.loads_arguments(text.encode("utf-8"))
        except (ValueError, UnicodeEncodeError):
            return False
    else:
        block = held[0].json().get("content_block")
        if not isinstance(block, dict) or "input" not in block:
            return False
        value = block["input"]
    return value is None or value == "" or value == []


def _apply_block(block: dict[str, Any], resolve: Resolver, *, truncated: bool = False) -> bool:
    # input "" / null / [] reaches the engine as empty arguments ({} for a tool that requires nothing).
    call = object_arguments_call(
        block["name"], block, "input", block.get("id") if isinstance(block.get("id"), str) else None, absent=None
    )
    if truncated:
        call = call.model_copy(update={"truncated": True})
    decision = resolve(call)
    if not decision.changed:
        return False
    new_name = apply_decision_name(decision)
    if new_name is not None:
        block["name"] = new_name
    if decision.arguments_after is not None:
        block["input"] = decision.arguments_after
    return True


def _tool_use_block(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _expand_parallel_block(block: dict[str, Any], flow: FlowContext, ids: CallIds) -> list[dict[str, Any]] | None:
    """The ``tool_use`` blocks a ``multi_tool_use.parallel`` block stands for (BR-08), each
    resolved (ids ``<wrapper id>_<i>``, made stable when not usable); ``None``: not a wrapper,
    or a part does not resolve (the wrapper stays whole)."""
    if block.get("name", "").strip() != PARALLEL_WRAPPER or not isinstance(block.get("input"), dict):
        return None
    wrapper = ToolCall(
        name=block["name"], arguments=block["input"], id=block.get("id") if isinstance(block.get("id"), str) else None
    )
    expanded = textcalls.expand_parallel(wrapper, flow)
    if expanded is None:
        return None
    out = []
    for sub, decision in expanded:
        args = decision.arguments_after if decision.arguments_after is not None else sub.arguments
        out.append(
            _tool_use_block(
                ids.fix(sub.id) or str(sub.id), decision.target or sub.name, args if isinstance(args, dict) else {}
            )
        )
    return out


def lift_text_block(content: list[Any], flow: FlowContext, ids: CallIds) -> tuple[int, list[dict[str, Any]]] | None:
    """``(index, blocks)``: the one text block of ``content`` to replace with ``blocks`` (the
    reasoning text that remains, if any, then one ``tool_use`` block per lifted call), or
    ``None`` to leave ``content`` as it is.

    Lifted only when ``content`` has no ``tool_use`` block and exactly one text block that is not
    blank, and that text is nothing but tool-call markup whose calls resolve and validate
    (:func:`toolvocab.dialects.textcalls.lift`). Ids are stable (``tc_…``, :class:`CallIds`; a model's
    own id such as Kimi's ``functions.x:0`` would not match Anthropic's id pattern)."""
    if any(isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use") for b in content):
        return None
    texts = [
        i
        for i, b in enumerate(content)
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip()
    ]
    if len(texts) != 1 or content[texts[0]].get("citations"):
        return None  # none, more than one, or a text that cites a source (markup in it is quoted)
    index = texts[0]
    found = textcalls.lift(content[index]["text"], flow, lambda i: ids.fix(None) or "")
    if found is None:
        return None
    remaining, calls = found
    blocks: list[dict[str, Any]] = []
    if remaining.strip():
        blocks.append({**content[index], "text": remaining})
    for call in calls:
        call_id = call.id if _TOOL_USE_ID.fullmatch(call.id) else ids.fix(None) or ""
        blocks.append(_tool_use_block(call_id, call.name, call.arguments))
    return index, blocks


#: Anthropic's pattern for a ``tool_use`` id (the API rejects others when the call is replayed).
_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")


def _cannot_close(raw: bytes) -> bool:
    """True for a ``text_delta`` event whose text holds no ``<`` (nor a JSON ``\\u`` escape that
    could spell one): it cannot hold or finish a closing tag."""
    return b'"text_delta"' in raw and b"<" not in raw and b"\\u" not in raw


#: Events that carry a block ``index``.
_BLOCK_EVENTS = ("content_block_start", "content_block_delta", "content_block_stop")

#: Events after which a held tool_use block can no longer complete.
_BLOCK_BREAKERS = ("content_block_start", "message_delta", "message_stop", "error")


def _name_references_back(block: dict[str, Any], plan: Plan) -> bool:
    """:func:`_rename_references` from each upstream name this flow gave a declared tool (an
    alias, a repeat's alias) back to the client's."""
    if not (plan.rename_map or plan.duplicates):
        return False
    back = {upstream: name for name, upstream in plan.rename_map.items()}
    back.update((a, name) for name, aliases in plan.duplicates.items() for a in aliases if a is not None)
    return _rename_references(block, back)


def _rename_references(block: dict[str, Any], names: dict[str, str]) -> bool:
    """In a ``tool_search_tool_result`` block (the tools a server tool search loaded: its
    ``content.tool_references[].tool_name``, ``types/tool_search_tool_search_result_block.py`` of
    the anthropic SDK), each name in ``names`` renamed to its value; in place, True when one was."""
    content = block.get("content")
    references = content.get("tool_references") if isinstance(content, dict) else None
    changed = False
    for reference in references if isinstance(references, list) else ():
        if isinstance(reference, dict) and reference.get("type") == "tool_reference":
            changed |= _rename_key(reference, "tool_name", names)
    return changed


def _block_name(held: list[SSEEvent]) -> str:
    """The tool name a held block's ``content_block_start`` carries (``?`` when unreadable)."""
    data = held[0].json() if held else None
    block = data.get("content_block") if isinstance(data, dict) else None
    name = block.get("name") if isinstance(block, dict) else None
    return name if isinstance(name, str) else "?"


#: The events whose data a client parses (the anthropic SDKs' Stream: a ping or an event of
#: another name is skipped unread): one of them that is not JSON leaves a held call unknown.
_PARSED_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "error",
    }
)

_BASH_INPUT = "<bash-input>"

#: The first words of the user message Claude Code puts in place of the turns ``/compact`` (or an
#: automatic compaction) summarized (its bundled ``cli.js``, 2.1.197: "This session is being
#: continued from a previous conversation that ran out of context. The summary below covers the
#: earlier portion of the conversation."). The calls before it are gone from the request while
#: their effects stay (Bash's directory is the process's, not the transcript's).
_COMPACTED = "This session is being continued from a previous conversation"


def _bash_inputs(text: str) -> list[str]:
    """Each command between ``<bash-input>`` and ``</bash-input>`` in ``text`` (unclosed: to the end)."""
    out = []
    for part in text.split(_BASH_INPUT)[1:]:
        command, closed, _ = part.partition("</bash-input>")
        out.append(command if closed else part)
    return out


class AnthropicStream(EventStreamRewriter):
    """Rewrites an Anthropic SSE stream event by event.

    Text, thinking and every other event go out as soon as they are whole. A ``tool_use`` block
    is held from its ``content_block_start`` to its ``content_block_stop`` (its arguments arrive
    in ``input_json_delta`` fragments and may need fitting), then resolved once and sent: as
    received when nothing changes, else with the new name in ``content_block_start`` and the
    fitted input as one ``input_json_delta``. Events held meanwhile (``ping``) keep their order.
    A block still open at end of stream goes out unchanged. A ``multi_tool_use.parallel`` block
    goes out as one block per call (BR-08); later blocks' indexes shift to stay contiguous.

    Tool calls left in text (:func:`lift_text_block`): text deltas go out at once
    while the text is whitespace or a leading reasoning block, and for good once it is prose.
    From the delta where markup may start, the block is held to ``message_delta``; then it is
    lifted when the text is nothing but markup that resolves — the text block (already started)
    ends with what went out plus the reasoning that remains (possibly empty), ``tool_use``
    blocks follow, ``stop_reason`` ``end_turn`` becomes ``tool_use`` — else sent as it came. Another block starting, ``message_stop``,
    an error or the end of the stream release it unchanged.
    """

    #: A ``tool_use`` block is changed; a text block may be lifted (its start names its type).
    #: Both begin with a content_block_start, the only event on_event acts on while nothing is
    #: held or watched: one marker, one scan per chunk. Other events (text and thinking deltas
    #: included) pass unparsed.
    MARKERS = (b"content_block_start",)

    def __init__(self, flow: FlowContext) -> None:
        super().__init__()
        self._flow = flow
        self._resolve = flow.resolve
        self._ids = flow.ids()
        self._held: list[SSEEvent] | None = None
        self._held_index: Any = None
        #: A whole tool_use block whose input is an empty form (null, "", []), held to the
        #: message_delta: only an answer the model ended itself lets it become {} (a stream says
        #: how it ended after the block's stop).
        self._awaiting_end: list[SSEEvent] | None = None
        self._shift = 0  # blocks added by unwrapped parallel calls: later indexes move up
        # Text lift: never once a tool_use came, a second non-blank text block came, or no tools.
        self._no_lift = flow.tools is None or flow.stops or flow.limited  # nothing will be lifted: no text held
        self._text: textcalls.TextHold | None = None  # the text block that may be markup, and its hold
        self._text_index: Any = None
        self._names_only = False  # give_back: every later event as it came but for an alias named back

    def holding(self) -> bool:
        """A tool_use block is held, a text block is watched or held, or indexes shift: every
        event goes to :meth:`on_event`."""
        return self._held is not None or self._awaiting_end is not None or self._text is not None or self._shift != 0

    def has_held(self) -> bool:
        """A tool_use block or a text block that may be markup is held."""
        return bool(self._held) or bool(self._awaiting_end) or (self._text is not None and bool(self._text.held))

    def held(self) -> list[bytes]:
        """Raw bytes of the events being held (clears them)."""
        held, self._held = self._held or [], None
        awaiting, self._awaiting_end = self._awaiting_end or [], None
        text = self._text.release() if self._text is not None else []
        self._text = None
        return [e.raw for e in awaiting + text + held]

    def at_end(self) -> list[bytes]:
        """End of stream: whatever is held goes out as it came, a tool_use block's upstream
        alias of the client's own tool named back (:meth:`_let_go`)."""
        if self._held:
            self.unrepaired.append(
                f"the rewrite reached the end of the stream before the tool call {_block_name(self._held)}'s content_block_stop"
            )
            held, self._held = self._held, None
            return self.held() + self._let_go(held)
        return self.held()

    def let_go(self, why: str) -> list[bytes]:
        """What is held, given up (:meth:`EventStreamRewriter.let_go`): a held ``tool_use`` block
        (and one awaiting the answer's end) as it came but for an upstream alias named back
        (:meth:`_let_go`), held text as it came; no text is lifted after it. The rewrite goes on."""
        awaiting, self._awaiting_end = self._awaiting_end or [], None
        text = self._text.release() if self._text is not None else []
        self._text = None
        self._no_lift = True
        held, self._held = self._held or [], None
        out: list[bytes] = []
        if awaiting:
            self.unrepaired.append(f"{why} while the tool call {_block_name(awaiting)} was held")
            out += self._let_go(awaiting)
        out += [e.raw for e in text]
        if held:
            self.unrepaired.append(f"{why} while the tool call {_block_name(held)} was held")
            out += self._let_go(held)
        return out

    def give_back(self, why: str) -> list[bytes]:
        """:meth:`EventStreamRewriter.give_back`: :meth:`let_go`, then every later event as it
        came but for a ``tool_use`` block's upstream alias of the client's own tool (and a tool
        search's references to one), named back; indexes keep the shift unwrapped parallel
        calls gave them."""
        out = self.let_go(why)
        self._names_only = True
        self.repairs_after_let_go = False  # a later stall's note: nothing after this is repaired
        return out

    def _name_back(self, event: SSEEvent) -> list[bytes]:
        """One event after :meth:`give_back`: as it came but for the names it gives back."""
        data = event.json()
        kind = data.get("type") if isinstance(data, dict) else None
        if kind not in _BLOCK_EVENTS:
            return [event.raw]
        changed = False
        if self._shift and isinstance(data.get("index"), int):
            data, changed = {**data, "index": data["index"] + self._shift}, True
        block = data.get("content_block") if kind == "content_block_start" else None
        if isinstance(block, dict) and block.get("type") == "tool_use":
            named = self._named_back(block)
            if named is not None:
                data, changed = {**data, "content_block": named}, True
        elif isinstance(block, dict) and block.get("type") == "tool_search_tool_result":
            block = copy.deepcopy(block)
            if _name_references_back(block, self._flow.plan):
                data, changed = {**data, "content_block": block}, True
        return [event.with_json(data).raw] if changed else [event.raw]

    def _let_go(self, held: list[SSEEvent]) -> list[bytes]:
        """The held events of a ``tool_use`` block whose repair is given up, as they came but for
        an upstream alias of the client's own tool in its start, named back
        (:meth:`FlowContext.name_back`: spelling only, its input as sent; said at the end of the
        last ``unrepaired`` sentence, the give-up's)."""
        out = [e.raw for e in held]
        start = held[0].json() if held else None
        block = start.get("content_block") if isinstance(start, dict) else None
        if isinstance(block, dict) and isinstance(block.get("id"), str) and block["id"]:
            self._ids.fix(block["id"])  # counted, as sent: a later block under it gets another
        named = self._named_back(block) if isinstance(block, dict) else None
        if named is not None:
            out[0] = held[0].with_json({**start, "content_block": named}).raw
            if self.unrepaired:
                self.unrepaired[-1] += NAMED_BACK + named["name"]
        return out

    def _named_back(self, block: dict[str, Any]) -> dict[str, Any] | None:
        """``block`` (a tool call's content block) with its name, an upstream alias of the
        client's own tool, given back (:meth:`FlowContext.name_back`); ``None`` for any other name."""
        back = self._flow.name_back(block["name"]) if isinstance(block.get("name"), str) else None
        return None if back is None else {**block, "name": join_namespace(back[1], back[0])}

    def on_event(self, event: SSEEvent) -> list[bytes]:
        """Hold tool_use blocks until their stop; pass everything else at once. An event that is
        not JSON while a block (or text that may be a call) is held raises
        :class:`~toolvocab.dialects.sse.Unreadable`."""
        if self._names_only:
            return self._name_back(event)
        text = self._text
        if text is not None and text.held is None and text.watch.skippable() and _cannot_close(event.raw):
            # Inside an open reasoning block only a closing tag changes anything: a text delta
            # that cannot hold one goes out unparsed (no delay for a long <think> lead).
            return [event.raw]
        data = event.json()
        if data is None and event.data is not None and self.has_held() and event.event in _PARSED_EVENTS:
            raise Unreadable()  # the held call (or text) cannot be read whole: all goes as it came
        kind = data.get("type") if isinstance(data, dict) else None
        if self._shift and isinstance(data, dict) and kind in _BLOCK_EVENTS and isinstance(data.get("index"), int):
            data = {**data, "index": data["index"] + self._shift}
            event = event.with_json(data)
        if self._awaiting_end is not None:
            if kind == "message_delta" or not (event.data is None or kind == "ping"):
                # The message_delta says how the answer ended; anything else (another block,
                # message_stop, an error) leaves it unknown: the input then stays as sent.
                delta = data.get("delta") if kind == "message_delta" else None
                ended = isinstance(delta, dict) and _natural_end(delta.get("stop_reason"))
                awaiting = self._awaiting_end
                out = self._release(awaiting, truncated=not ended)
                self._awaiting_end = None  # only now: if _release raised, held() still has every byte
                return out + self.on_event(event)
            self._awaiting_end.append(event)
            return []
        if self._text is not None:
            return self._on_text(event, data, kind)
        if self._held is not None:
            if kind in _BLOCK_BREAKERS:
                # Out of order: the block cannot complete any more (another block starts, the
                # message ends, an error): what was held goes out as it came, then this event.
                held, self._held = self._held, None
                self.unrepaired.append(
                    f"a {kind} event came before the tool call {_block_name(held)}'s content_block_stop (events out of order)"
                )
                return self._let_go(held) + self.on_event(event)
            self._held.append(event)
            if kind == "content_block_stop" and data.get("index") == self._held_index:
                if _empty_form_input(self._held):
                    self._awaiting_end, self._held = self._held, None
                    return []
                out = self._release(self._held)
                self._held = None  # only now: if _release raised, held() still has every byte
                return out
            return []
        if kind == "content_block_start":
            block = data.get("content_block")
            if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                self._no_lift = True  # real calls: text is only text (as in a JSON answer)
                self._held = [event]
                self._held_index = data.get("index")
                return []
            if isinstance(block, dict) and block.get("type") in ("server_tool_use",):
                self._no_lift = True
            if isinstance(block, dict) and block.get("type") == "tool_search_tool_result":
                block = copy.deepcopy(block)
                if _name_references_back(block, self._flow.plan):
                    return [event.with_json({**data, "content_block": block}).raw]
            if isinstance(block, dict) and block.get("type") == "text" and not self._no_lift:
                if block.get("text") in ("", None) and not block.get("citations"):
                    # The start goes out at once (it carries no text); the block is watched.
                    self._text = textcalls.TextHold()
                    self._text_index = data.get("index")
                else:
                    # A start that comes with text (a compatible server's; even blank: its deltas,
                    # not watched, may say more) or cites a source: this block is not the one
                    # text, so no block's markup is lifted in this answer.
                    self._no_lift = True
        return [event.raw]

    # -- tool calls left in text ------------------------------------------------------

    def _end_watch(self, *, lift_possible: bool) -> list[bytes]:
        """Stop watching the text block; what is held goes out as it came."""
        out = [e.raw for e in self._text.release()] if self._text is not None else []
        self._text = None
        if not lift_possible:
            self._no_lift = True
        return out

    def _on_text(self, event: SSEEvent, data: Any, kind: Any) -> list[bytes]:
        text = self._text
        assert text is not None
        index = data.get("index") if isinstance(data, dict) else None
        if kind == "content_block_delta" and index == self._text_index:
            delta = data.get("delta")
            if isinstance(delta, dict) and delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                state, out = text.add(delta["text"], event)
                if state == textcalls.PROSE:
                    self._text = None
                    self._no_lift = True
                return [e.raw for e in out]
            # Anything else inside a text block (a citation delta): not markup alone.
            return self._end_watch(lift_possible=False) + [event.raw]
        if kind == "content_block_stop" and index == self._text_index:
            if text.held is None:
                self._text = None
                if text.watch.text.strip():
                    self._no_lift = True  # a text block that is reasoning alone is not markup
                return [event.raw]
            return text.keep(event)  # markup: held to message_delta (prose may still come in another block)
        if kind == "message_delta" and text.held is not None and text.state == textcalls.MARKUP:
            text.keep(event)
            out = self._lift_held(data)
            self._text = None
            self._no_lift = True
            return out
        if kind in ("ping",) or event.data is None:
            return [e.raw for e in text.keep(event)]
        # Another block, message_stop, an error: the text cannot be lifted; out as it came.
        return self._end_watch(lift_possible=False) + self.on_event(event)

    def _lift_held(self, message_delta: dict[str, Any]) -> list[bytes]:
        """The held text block (and the ``message_delta`` that ended the hold, last in it) as
        ``tool_use`` blocks when its text lifts, else as it came."""
        hold = self._text
        assert hold is not None and hold.held is not None
        held = hold.held
        text = hold.watch.text
        delta = message_delta.get("delta") if isinstance(message_delta, dict) else None
        if not isinstance(delta, dict) or not _natural_end(delta.get("stop_reason")):
            # max_tokens, stop_sequence, refusal, pause_turn…: perhaps cut short, never lifted
            return [e.raw for e in held]
        found = textcalls.lift(text, self._flow, lambda i: self._ids.fix(None) or "")
        if found is None:
            return [e.raw for e in held]
        remaining, calls = found
        template = held[-1]
        index = self._text_index if isinstance(self._text_index, int) else 0
        out: list[bytes] = []
        # The text block's start (and any lead) went out: it stays, ends with its reasoning (or
        # empty), and the calls follow it.
        extra = hold.remaining_after_release(remaining)
        if extra:
            out.append(
                _event_like(
                    template,
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": extra}},
                )
            )
        out.append(_event_like(template, "content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
        for call in calls:
            call_id = call.id if _TOOL_USE_ID.fullmatch(call.id) else self._ids.fix(None) or ""
            out += _tool_use_events(template, index, call_id, call.name, call.arguments)
            index += 1
        for event in held[:-1]:
            data = event.json()
            if event.data is None or (isinstance(data, dict) and data.get("type") == "ping"):
                out.append(event.raw)  # keep-alives keep going out
        delta = message_delta.get("delta")
        if isinstance(delta, dict) and delta.get("stop_reason") == "end_turn":
            out.append(held[-1].with_json({**message_delta, "delta": {**delta, "stop_reason": "tool_use"}}).raw)
        else:
            out.append(held[-1].raw)
        return out

    def _release(self, held: list[SSEEvent], *, truncated: bool = False) -> list[bytes]:
        start = held[0]
        start_data = start.json()
        block = dict(start_data["content_block"])
        index = start_data.get("index")
        fragments, deltas = _input_deltas(held)
        text = "".join(fragments)
        new_id = self._ids.fix(block.get("id"))
        if new_id is not None:
            block["id"] = new_id
        call_id = block.get("id") if isinstance(block.get("id"), str) else None
        if text.strip():
            try:
                parsed: Any = jsonio.loads_arguments(text.encode("utf-8"))
            except (ValueError, UnicodeEncodeError):
                # Lossless repairs only (code fence, trailing comma, Python literals, raw
                # control characters); anything else, a cut-off text included, stays as sent.
                call = ToolCall.read(block["name"], text, call_id=call_id)
            else:
                # A delta spelling null / [] / "" is an empty form.
                call = object_arguments_call(block["name"], {"input": parsed}, "input", call_id, absent=None)
                if isinstance(parsed, str) and not call.empty_arguments:
                    # JSON encoded twice: ToolCall.read reads the object inside, losslessly.
                    call = ToolCall.read(block["name"], text, call_id=call_id)
        else:
            # No fragment: the input is the start's. {} there is the normal wire form of an
            # empty input; null / "" / [] there is an empty form.
            call = object_arguments_call(block["name"], block, "input", call_id, absent={})
        if truncated:
            call = call.model_copy(update={"truncated": True})
        if block["name"].strip() == PARALLEL_WRAPPER and isinstance(call.arguments, dict):
            expanded = textcalls.expand_parallel(call, self._flow)
            if expanded is not None:  # BR-08: one block per call; later blocks move up
                parts: list[bytes] = []
                start_index = index if isinstance(index, int) else 0
                for k, (sub, decision) in enumerate(expanded):
                    args = decision.arguments_after if decision.arguments_after is not None else sub.arguments
                    # <block id>_<i>: an id the answer may already have (or get later): counted
                    # with the others, a repeated one replaced, as the JSON path does
                    own = sub.id if sub.id and _TOOL_USE_ID.fullmatch(sub.id) else None
                    sub_id = self._ids.fix(own) or own or ""
                    parts += _tool_use_events(
                        held[-1],
                        start_index + k,
                        sub_id,
                        decision.target or sub.name,
                        args if isinstance(args, dict) else {},
                    )
                parts += [
                    e.raw
                    for e in held[1:-1]
                    if e.data is None or (isinstance(e.json(), dict) and e.json().get("type") == "ping")
                ]
                self._shift += len(expanded) - 1
                return parts
        decision = self._resolve(call)
        if not decision.changed and new_id is None:
            return [e.raw for e in held]
        new_name = apply_decision_name(decision) if decision.changed else None
        out: list[bytes] = []
        start_changed = new_id is not None
        if new_name is not None:
            block["name"] = new_name
            start_changed = True
        if decision.arguments_after is not None and (
            not isinstance(block.get("input"), dict) or (not deltas and block["input"])
        ):
            block["input"] = {}  # the fitted input goes out as a delta; clients append deltas
            start_changed = True
        out.append(start.with_json({**start_data, "content_block": block}).raw if start_changed else start.raw)
        if not decision.changed or decision.arguments_after is None:
            out.extend(e.raw for e in held[1:])
            return out
        new_json = jsonio.dumps(decision.arguments_after).decode()
        placed = False
        for i, event in enumerate(held[1:], start=1):
            if i in deltas:
                if not placed:
                    data = event.json()
                    out.append(event.with_json({**data, "delta": {**data["delta"], "partial_json": new_json}}).raw)
                    placed = True
                continue
            if i == len(held) - 1 and not placed and decision.arguments_after:
                # No delta carried the input (it sat in content_block_start): add one before the
                # stop; for {} the start's input: {} with no delta is the normal form.
                delta = {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": new_json},
                }
                out.append(_event_like(event, "content_block_delta", delta))
                placed = True
            out.append(event.raw)
        return out


def _tool_use_events(template: SSEEvent, index: int, call_id: str, name: str, arguments: dict[str, Any]) -> list[bytes]:
    """``content_block_start`` / one ``input_json_delta`` / ``content_block_stop`` of a
    ``tool_use`` block, framed like ``template``."""
    return [
        _event_like(
            template,
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            },
        ),
        _event_like(
            template,
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": jsonio.dumps(arguments).decode()},
            },
        ),
        _event_like(template, "content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _event_like(template: SSEEvent, event_name: str, data: dict[str, Any]) -> bytes:
    """A new event framed like ``template`` (same line ending and terminator)."""
    raw = template.raw.decode("utf-8", errors="surrogateescape")
    m = re.search(r"\r\n|\r|\n", raw)
    eol = m.group(0) if m else "\n"
    lines = []
    if template.event is not None:
        lines.append(f"event: {event_name}")
    lines.append("data: " + data_line_json(data))
    return (eol.join(lines) + eol + eol).encode()


DIALECT = AnthropicMessages()
