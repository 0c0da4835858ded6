"""OpenAI Responses (``POST …/responses``, and Codex's WebSocket transport): where names live.

Shapes from the Responses API reference and the ``openai`` Python SDK types
(``responses/tool_param.py``, ``response_input_item_param.py``, ``response_stream_event.py``)
and Codex CLI 0.171's requests (wire-formats §3). Tools: ``function`` and ``custom`` carry a
top-level ``name``; a ``namespace`` tool (Codex's MCP servers: ``{"type": "namespace", "name":
"mcp__server__", "tools": [...]}``) is keyed by the pair (namespace, name); built-ins carry no
name and are never touched. Streams are SSE (``event:`` + ``data:``); over a WebSocket each JSON
event is one frame. A call's name is only in ``response.output_item.added`` / ``.done`` items
and in the ``response`` object that ``response.completed`` (and ``created``, ``in_progress``,
``incomplete``, ``failed``) echoes, together with ``tools`` and ``tool_choice``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from toolvocab.dialects import textcalls
from toolvocab.dialects.base import JSON
from toolvocab.dialects.base import NAMED_BACK
from toolvocab.dialects.base import STOP_KEYS
from toolvocab.dialects.base import FlowContext
from toolvocab.dialects.base import JSONFrame
from toolvocab.dialects.base import Peek
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
from toolvocab.dialects.sse import data_line_json
from toolvocab.engine import jsonio
from toolvocab.engine.errors import ToolResult
from toolvocab.engine.ids import RESPONSES_CALL_ID_MAX
from toolvocab.engine.ids import id_aliases
from toolvocab.engine.ids import responses_accepts
from toolvocab.engine.ids import stable_call_id
from toolvocab.engine.ladder import DUPLICATE_MARK
from toolvocab.engine.models import ABSENT
from toolvocab.engine.models import Action
from toolvocab.engine.models import Decision
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import Step
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.names import join_namespace
from toolvocab.engine.names import split_flat
from toolvocab.engine.plan import DuplicateCursor
from toolvocab.engine.plan import Plan
from toolvocab.engine.wrapped import PARALLEL_WRAPPER

_CALL_TYPES = {"function_call": ToolKind.FUNCTION, "custom_tool_call": ToolKind.FREEFORM}
_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
_TERMINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed", "response.done")
_RESPONSE_EVENTS = (
    "response.created",
    "response.in_progress",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "response.done",
    "response.queued",
)
#: A response status that says the answer stopped short (OpenAI API reference, "The response
#: object", ``status``): its calls' empty arguments are never completed.
_CUT_STATUSES = ("incomplete", "failed", "cancelled")


def _hides_items(item: Any) -> bool:
    """An input item that stands for items the request does not carry: an item reference
    (``{"type": "item_reference", "id"}``, or ``{"id"}`` alone: OpenAI API reference, "Create a
    model response", input item "Item reference"), or a compaction (Codex 0.171.0's
    ``compaction`` item, encrypted: the calls it summarizes cannot be read)."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if kind is None:
        return "id" in item and "role" not in item
    return kind == "item_reference" or (isinstance(kind, str) and "compaction" in kind)


def _flat(namespace: Any, name: str) -> str:
    return join_namespace(namespace if isinstance(namespace, str) else None, name)


#: The input item that declares tools inside ``input`` (``{"type": "additional_tools", "role":
#: "developer", "tools": [...]}``: openai-python ``types/responses/response_input_item_param.py``).
ADDITIONAL_TOOLS = "additional_tools"
#: The input items whose ``tools`` the client declares: ``additional_tools``, and
#: ``tool_search_output``, whose ``tools`` are "the loaded tool definitions returned by the tool
#: search output" (openai-python ``ResponseToolSearchOutputItemParam``; a client-executed
#: ``tool_search`` tool, as Codex declares, returns them).
_TOOL_ITEMS = (ADDITIONAL_TOOLS, "tool_search_output")
#: The output item that lists tool definitions: a ``tool_search``'s result, whose ``tools`` are
#: the loaded definitions (openai-python ``types/responses/response_tool_search_output_item.py``);
#: the client keeps them and sends them back as an input item (:data:`_TOOL_ITEMS`).
TOOL_SEARCH_OUTPUT = _TOOL_ITEMS[1]


def _tool_lists(body: JSON) -> list[list[Any]]:
    """Every list of tools the request declares, in :meth:`OpenAIResponses.declared_tools`' order:
    the top-level ``tools``, then the ``tools`` of each input item that declares some
    (:data:`_TOOL_ITEMS`)."""
    if not isinstance(body, dict):
        return []
    lists = [body["tools"]] if isinstance(body.get("tools"), list) else []
    return lists + [
        item["tools"]
        for item in as_list(body.get("input"))
        if isinstance(item, dict) and item.get("type") in _TOOL_ITEMS and isinstance(item.get("tools"), list)
    ]


class _Item(msgspec.Struct, gc=False):
    """An input item as the peek reads it: ``content`` kept as sent (read only for the prompt and
    the environment context); ``arguments``, ``output`` and reasoning skipped."""

    type: Any = msgspec.UNSET
    role: Any = msgspec.UNSET
    name: Any = msgspec.UNSET
    namespace: Any = msgspec.UNSET
    call_id: Any = msgspec.UNSET
    content: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class _Request(msgspec.Struct, gc=False):
    """The keys the request readers read (:meth:`OpenAIResponses.peek`)."""

    model: Any = msgspec.UNSET
    stream: Any = msgspec.UNSET
    instructions: Any = msgspec.UNSET
    store: Any = msgspec.UNSET
    conversation: Any = msgspec.UNSET
    background: Any = msgspec.UNSET
    stop: Any = msgspec.UNSET
    stop_token_ids: Any = msgspec.UNSET
    stop_regex: Any = msgspec.UNSET
    input: str | list[_Item] | msgspec.UnsetType = msgspec.UNSET
    tools: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    tool_choice: Any = msgspec.UNSET
    parallel_tool_calls: Any = msgspec.UNSET


_PEEK = msgspec.json.Decoder(_Request)

#: The record's note when an answer the upstream keeps holds what would otherwise be lifted or
#: expanded (:attr:`toolvocab.dialects.base.FlowContext.stored`).
KEPT_NOTE = (
    "the upstream keeps this response (store is not false, or a WebSocket turn) and a later request may "
    "continue from it: no call it did not send is made (tool-call markup stays text, a "
    "multi_tool_use.parallel call stays whole, an empty call id stays empty)"
)


def _is_parallel_wrapper(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("type") == "function_call"
        and isinstance(item.get("name"), str)
        and item["name"].strip() == PARALLEL_WRAPPER
    )


class OpenAIResponses:
    """The Responses dialect (HTTP and the WebSocket frames Codex sends)."""

    name = "openai_responses"

    def path_matches(self, method: str, path: str) -> bool:
        """POST to ``…/responses``."""
        return method == "POST" and path_only(path).endswith("/responses")

    def matches(self, method: str, path: str, body: JSON) -> bool:
        """POST to ``…/responses`` with an ``input`` or ``tools`` field."""
        return isinstance(body, dict) and ("input" in body or "tools" in body) and self.path_matches(method, path)

    def peek(self, method: str, path: str, content: bytes) -> Peek | None:
        """``model``, ``stream``, ``instructions``, and of ``input`` each item's type, role,
        name, namespace and ``call_id``, and the content of the prompt's messages and of the
        first items (the environment context); ``tools`` as sent. ``None`` for a body with a
        ``call_id`` the upstream rejects (only the whole read aliases ids)."""
        request = typed_decode(_PEEK, content) if self.path_matches(method, path) else None
        if request is None or (request.input is msgspec.UNSET and request.tools is msgspec.UNSET):
            return None
        if request.background is True:
            return None  # its answer is not read (answers_unread): the whole read plans it so
        small = present(request, "model", "stream", "instructions", "store", "conversation")
        texts = content_texts(small.get("instructions"))
        platform: list[str] = []
        names: list[str] = []
        longest = 0
        for position, item in enumerate(request.input if type(request.input) is list else ()):
            if item.type in _TOOL_ITEMS:
                return None  # tools declared inside input: the whole read reads them
            if type(item.call_id) is str:
                longest = max(longest, len(item.call_id))
            if item.type == "function_call" and type(item.name) is str:
                names.append(_flat(item.namespace, item.name))
            message = item.type is msgspec.UNSET or item.type == "message"
            if (
                not message
                or item.content is msgspec.UNSET
                or (position >= 8 and item.role not in ("system", "developer"))
            ):
                continue
            try:
                parts = content_texts(jsonio.loads(bytes(item.content)))
            except ValueError:
                return None
            if item.role in ("system", "developer"):
                texts += parts
            if position < 8:
                platform += [t for t in parts if "<environment_context>" in t]
        if longest > RESPONSES_CALL_ID_MAX:
            return None
        return Peek(
            self.model_of(path, small),
            self.wants_stream(path, small),
            texts,
            texts + platform,
            names,
            sections_of(request, "tools"),
            self.keeps_answer(small),
            stops=self.stop_sequences(present(request, *STOP_KEYS)),
            limited=self.limits_calls(choice := present(request, "tool_choice", "parallel_tool_calls")),
            allowed=self.allowed_names(choice),
        )

    # -- request ------------------------------------------------------------------------------

    def declared_tools(self, body: JSON) -> list[DeclaredTool]:
        """``function`` tools, ``custom`` tools (freeform) and the members of ``namespace``
        tools (with their namespace), of the top-level ``tools`` and then of each input item that
        declares tools (:func:`_tool_lists`). A tool an input item declares under a name already
        declared is that tool again (a deferred tool a tool search loaded), never a second
        declaration to drop or alias. Built-ins (``web_search``, ``local_shell``, ``apply_patch``,
        ``tool_search``, ``mcp``…) have no name to repair to: not listed."""
        out: list[DeclaredTool] = []
        raws: list[Any] = []
        lists = _tool_lists(body)
        first = 1 if isinstance(body, dict) and isinstance(body.get("tools"), list) else 0
        for n, tools in enumerate(lists):
            declared = {decl.qualified for decl in out} if n >= first else set()
            for tool in tools:
                if not isinstance(tool, dict):
                    continue
                if tool.get("type") == "namespace" and isinstance(tool.get("name"), str):
                    found = [(_declared(inner, namespace=tool["name"]), inner) for inner in as_list(tool.get("tools"))]
                else:
                    found = [(_declared(tool, namespace=None), tool)]
                for decl, raw in found:
                    if decl is not None and decl.qualified not in declared:
                        out.append(decl)
                        raws.append(raw)
        return mark_repeats(out, raws)

    def declarations(self, body: JSON) -> JSON:
        """All that :meth:`declared_tools` reads: ``body["tools"]``, or with the tools of the input
        items that declare some, ``{"tools": …, "additional_tools": [[…], …]}``."""
        if not isinstance(body, dict):
            return None
        lists = _tool_lists(body)
        if isinstance(body.get("tools"), list):
            lists = lists[1:]
        return body.get("tools") if not lists else {"tools": body.get("tools"), ADDITIONAL_TOOLS: lists}

    def transcript_names(self, body: JSON) -> list[str]:
        """Flat names of ``function_call`` input items."""
        items = body.get("input")
        names: list[str] = []
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call" and isinstance(item.get("name"), str):
                names.append(_flat(item.get("namespace"), item["name"]))
        return names

    def transcript_calls(self, body: JSON, keep: Callable[[str], bool] | None = None) -> list[tuple[str, Any]] | None:
        """``(flat name, arguments)`` of each ``function_call`` / ``custom_tool_call`` input
        item, in order (with ``keep``, of those whose flat name it accepts: no other call's
        arguments are parsed; ``arguments`` parsed when it is a JSON object's text; a custom
        call's ``input`` as sent); ``None`` for a request that continues a response or
        conversation the upstream keeps (``previous_response_id``, ``conversation``) or that
        stands for items it does not carry (:func:`_hides_items`): its earlier calls are not all
        in it."""
        if not isinstance(body, dict) or body.get("previous_response_id") or body.get("conversation"):
            return None
        items = body.get("input")
        if any(_hides_items(item) for item in (items if isinstance(items, list) else ())):
            return None
        named = [
            (_flat(item.get("namespace"), item["name"]), item)
            for item in (items if isinstance(items, list) else ())
            if _is_call(item) and isinstance(item.get("name"), str)
        ]
        return [
            (
                name,
                parsed_arguments(item.get("arguments")) if item.get("type") == "function_call" else item.get("input"),
            )
            for name, item in named
            if keep is None or keep(name)
        ]

    def tool_results(self, body: JSON) -> list[ToolResult]:
        """Every ``function_call_output`` / ``custom_tool_call_output`` input item, in order.

        Text is ``output`` as a string, or the text of its content parts joined by newlines;
        Responses carries no error flag, so ``is_error`` is ``None``. The name is the flat name
        (namespace joined) of the ``function_call`` / ``custom_tool_call`` item with the same
        ``call_id``, else the output item's own optional ``name`` / ``namespace``.
        """
        results: list[ToolResult] = []
        calls: dict[str, str] = {}
        items = body.get("input") if isinstance(body, dict) else None
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, dict):
                continue
            kind = item.get("type") if isinstance(item.get("type"), str) else None
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            if kind in _CALL_TYPES:
                if call_id is not None and isinstance(item.get("name"), str):
                    calls[call_id] = _flat(item.get("namespace"), item["name"])
            elif kind in _OUTPUT_TYPES:
                name = calls.get(call_id) if call_id is not None else None
                if name is None and isinstance(item.get("name"), str):
                    name = _flat(item.get("namespace"), item["name"])
                results.append(
                    ToolResult(
                        call_id=call_id, name=name, text="\n".join(content_texts(item.get("output"))), is_error=None
                    )
                )
        return results

    def model_of(self, path: str, body: JSON) -> str | None:
        """``model`` from the body."""
        return body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None

    def platform_texts(self, body: JSON) -> list[str]:
        """The system texts, and the text of an early input message holding Codex's
        ``<environment_context>`` (it names the shell Codex runs commands in)."""
        texts = self.system_texts(body)
        items = body.get("input") if isinstance(body, dict) else None
        for item in items[:8] if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("type", "message") == "message":
                texts += [t for t in content_texts(item.get("content")) if "<environment_context>" in t]
        return texts

    def system_texts(self, body: JSON) -> list[str]:
        """``instructions`` and the text of every ``system`` / ``developer`` input message."""
        texts = content_texts(body.get("instructions"))
        items = body.get("input")
        if isinstance(items, list):
            for item in items:
                if (
                    isinstance(item, dict)
                    and item.get("type", "message") == "message"
                    and item.get("role") in ("system", "developer")
                ):
                    texts += content_texts(item.get("content"))
        return texts

    def apply_request(self, body: JSON, plan: Plan) -> bool:
        """Rename per ``plan.rename_map`` (flat names) in function tools and namespace members (of
        ``tools`` and of the input items that declare tools), ``tool_choice`` (function and
        ``allowed_tools``) and ``function_call`` input items; add
        the prompt sentence to ``instructions`` or the first developer/system message."""
        changed = False
        rename = plan.rename_map
        lists = _tool_lists(body)
        # One count over every list of tools and each namespace's members at its place
        # (declared_tools' order).
        cursor = DuplicateCursor(plan)
        for tools in lists:
            changed |= dedupe_tools(
                tools, plan, _responses_tool_name, _set_responses_tool_name, cursor=cursor, members=_namespace_members
            )
        if rename:
            for tool in (tool for tools in lists for tool in tools):
                if not isinstance(tool, dict):
                    continue
                if tool.get("type") == "function":
                    changed |= _rename_named(tool, None, rename)
                elif tool.get("type") == "namespace" and isinstance(tool.get("name"), str):
                    for inner in as_list(tool.get("tools")):
                        if isinstance(inner, dict) and inner.get("type") == "function":
                            changed |= _rename_named(inner, tool["name"], rename)
            choice = body.get("tool_choice")
            if isinstance(choice, dict):
                if choice.get("type") == "function":
                    changed |= _rename_named(choice, choice.get("namespace"), rename)
                for entry in as_list(choice.get("tools")):
                    if isinstance(entry, dict) and entry.get("type") == "function":
                        changed |= _rename_named(entry, entry.get("namespace"), rename)
            items = body.get("input")
            if isinstance(items, list):
                for item in items:
                    if (
                        isinstance(item, dict)
                        and item.get("type") in ("function_call", "function_call_output")
                        and isinstance(item.get("name"), str)
                    ):
                        changed |= _rename_named(item, item.get("namespace"), rename)
        if plan.prompt_sentence:
            changed |= _add_sentence(body, plan.prompt_sentence)
        return changed

    def request_heads(self, body: JSON, plan: Plan) -> dict[str, int]:
        """``{}``: each list this dialect's plan changes is written whole."""
        return {}

    def request_keys(self, body: JSON, plan: Plan, aliases: dict[str, str] | None = None) -> frozenset[str] | None:
        """``tools`` and ``tool_choice``; ``input`` when names are renamed (earlier
        ``function_call`` items) or a replayed ``call_id`` is aliased (``aliases``, else
        :meth:`call_id_aliases`); for the prompt sentence ``instructions``, and ``input`` unless
        ``instructions`` is a non-empty string (which alone takes the sentence then:
        :func:`_add_sentence`)."""
        keys = {"tools", "tool_choice"}
        declared_in_input = len(_tool_lists(body)) > isinstance(body.get("tools"), list)
        if aliases is None:
            aliases = _history_aliases(body)
        if plan.rename_map or aliases or (plan.duplicates and declared_in_input):
            keys.add("input")
        if plan.prompt_sentence:
            keys.add("instructions")
            instructions = body.get("instructions")
            if not (isinstance(instructions, str) and instructions):
                keys.add("input")
        return frozenset(keys)

    # -- response -----------------------------------------------------------------------------

    def call_id_aliases(self, body: JSON) -> dict[str, str]:
        """Replayed ``call_id`` values the upstream rejects -> alias (``Dialect.call_id_aliases``)."""
        return _history_aliases(body)

    def alias_call_ids(self, body: JSON, aliases: dict[str, str] | None = None) -> dict[str, str]:
        """Replayed ``call_id`` values the upstream rejects (``aliases``, else
        :meth:`call_id_aliases`), sent as their aliases in every input item that carries them
        (``Dialect.alias_call_ids``)."""
        if aliases is None:
            aliases = _history_aliases(body)
        for item in _call_id_items(body) if aliases else ():
            if item["call_id"] in aliases:
                item["call_id"] = aliases[item["call_id"]]
        return aliases

    def rewrite_response(self, body: JSON, flow: FlowContext) -> bool:
        """Resolve every ``function_call`` / ``custom_tool_call`` in ``output[]``; rename the
        ``tools`` / ``tool_choice`` echo back to the client's names."""
        if not isinstance(body, dict):
            return False
        core = ResponsesCore(flow)
        return core.rewrite_response_object(body)

    def answer_may_change(self, raw: bytes) -> bool:
        """True: every JSON answer is read (its calls and the ``tools`` it echoes are read whole)."""
        return True

    def wants_stream(self, path: str, body: JSON) -> bool:
        """``"stream": true`` in the request body."""
        return isinstance(body, dict) and body.get("stream") is True

    def answers_unread(self, path: str, body: JSON) -> str | None:
        """A background response (``"background": true``): its output is fetched later with
        ``GET /v1/responses/{id}`` (OpenAI API reference, Create a model response,
        ``background``; Retrieve a model response), which toolvocab does not read."""
        if isinstance(body, dict) and body.get("background") is True:
            return "a background response is fetched later with a GET, which toolvocab does not read"
        return None

    def keeps_answer(self, body: JSON) -> bool:
        """``store`` is not ``false`` (the API keeps the response, its default being true, and a
        request may continue from it with ``previous_response_id``), or the request names a
        ``conversation``, to which the response's output items are added when it completes
        (OpenAI API reference, "Create a model response": ``store``, ``conversation``)."""
        if not isinstance(body, dict):
            return True
        return body.get("store") is not False or body.get("conversation") is not None

    def stop_sequences(self, body: JSON) -> bool:
        """A non-empty stop key (:data:`toolvocab.dialects.base.STOP_KEYS`):
        OpenAI's Responses API takes none, vLLM's ``/v1/responses`` takes ``stop`` and reports
        ``status`` ``completed`` for an end at one (its ``ResponsesRequest``)."""
        return names_stops(body)

    def limits_calls(self, body: JSON) -> bool:
        """A ``tool_choice`` other than ``auto``/``required``/none (``none``, one function, an
        ``allowed_tools`` list, a hosted tool), or ``parallel_tool_calls: false``
        (:func:`toolvocab.dialects.base.openai_limits_calls`)."""
        return openai_limits_calls(body)

    def allowed_names(self, body: JSON) -> frozenset[str] | None:
        """:func:`toolvocab.dialects.base.openai_allowed_names`."""
        return openai_allowed_names(body)

    def stream_rewriter(self, flow: FlowContext) -> ResponsesStream:
        """A fresh :class:`ResponsesStream` for one flow."""
        return ResponsesStream(flow)


def _declared(tool: Any, namespace: str | None) -> DeclaredTool | None:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        return None
    if tool.get("type") == "function":
        params = tool.get("parameters")
        return DeclaredTool(
            name=tool["name"],
            namespace=namespace,
            kind=ToolKind.FUNCTION,
            input_schema=params if isinstance(params, dict) else None,
            description=tool.get("description") if isinstance(tool.get("description"), str) else None,
        )
    if tool.get("type") == "custom":
        return DeclaredTool(name=tool["name"], namespace=namespace, kind=ToolKind.FREEFORM)
    return None


def _responses_tool_name(tool: Any) -> str | None:
    if isinstance(tool, dict) and tool.get("type") in ("function", "custom") and isinstance(tool.get("name"), str):
        return tool["name"]
    return None


def _set_responses_tool_name(tool: Any, alias: str) -> None:
    if tool.get("type") == "function":
        tool["name"] = alias


def _namespace_members(tool: Any) -> tuple[list[Any], Callable[[Any], str | None], Callable[[Any, str], None]] | None:
    """A ``namespace`` entry's member list with its flat names (``namespace__name``), for
    :func:`dedupe_tools`, counting the members :meth:`OpenAIResponses.declared_tools` reads
    (``function`` and ``custom`` ones of a namespace with a name); ``None`` for any other entry."""
    if not (
        isinstance(tool, dict)
        and tool.get("type") == "namespace"
        and isinstance(tool.get("name"), str)
        and isinstance(tool.get("tools"), list)
    ):
        return None
    ns: str = tool["name"]

    def name_of(t: Any) -> str | None:
        name = _responses_tool_name(t)
        return join_namespace(ns, name) if name is not None else None

    def set_name(t: Any, alias: str) -> None:
        if t.get("type") == "function":  # a custom (freeform) tool is never renamed
            t["name"] = split_flat(ns, alias)

    return tool["tools"], name_of, set_name


def _rename_named(obj: dict[str, Any], namespace: Any, rename: dict[str, str]) -> bool:
    name = obj.get("name")
    if not isinstance(name, str):
        return False
    flat = _flat(namespace, name)
    if flat not in rename:
        return False
    obj["name"] = split_flat(namespace if isinstance(namespace, str) else None, rename[flat])
    return True


def _add_sentence(body: dict[str, Any], sentence: str) -> bool:
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        body["instructions"] = instructions + "\n\n" + sentence
        return True
    items = body.get("input")
    if isinstance(items, list):
        for item in items:
            if (
                isinstance(item, dict)
                and item.get("type", "message") == "message"
                and item.get("role") in ("developer", "system")
            ):
                content = item.get("content")
                if isinstance(content, str):
                    item["content"] = content + "\n\n" + sentence
                    return True
                if isinstance(content, list):
                    content.append({"type": "input_text", "text": sentence})
                    return True
    if instructions is None:
        body["instructions"] = sentence
        return True
    if instructions == "":
        # kept apart from "none sent" (the sentence alone), so the echo gives each back
        # (ResponsesCore.rewrite_response_object)
        body["instructions"] = "\n\n" + sentence
        return True
    return False


class ResponsesCore:
    """Event logic shared by the SSE stream and the WebSocket frames.

    Works on parsed JSON events. ``on_event(obj)`` returns ``None`` to hold the event, or the
    list of ``(original_or_None, obj)`` pairs to send: ``original`` is the event to send
    byte-identical (``obj`` unchanged), ``None`` means ``obj`` was rewritten.
    """

    def __init__(self, flow: FlowContext) -> None:
        self.flow = flow
        self.resolve = flow.resolve
        self.plan = plan = flow.plan
        # For the echo: a duplicate's alias goes back to the plain name the client declared.
        self.reverse = {k: v.split(DUPLICATE_MARK, 1)[0] for k, v in plan.reverse_map.items()}
        self.decided: dict[
            str, tuple[Decision, str | None, str | None]
        ] = {}  # item id / call_id → (decision, new args, new call_id)
        #: Item ids (call_ids) of the calls let go (:meth:`let_go`): they end as they began.
        self.let_gone: set[str] = set()
        #: Item id (call_id) -> the item its decision was made from (:func:`_same_call`).
        self._called: dict[str, dict[str, Any]] = {}
        #: Item ids under which another call came (:data:`SAME_ID_NOTE`): an event that names its
        #: call only by such an id (``item_id``) is not given that id's decision.
        self.reused: set[str] = set()
        #: Item id (call_id) -> the decision of a call whose events went to the client changed
        #: (:meth:`ResponsesStream._release`): a copy of it given up later leaves the decision
        #: in the record, and the ``response.completed`` echo shows the call as it went first.
        self.delivered: dict[str, tuple[Decision, str | None, str | None]] = {}
        #: Calls that went out with neither an item id nor a call_id, in order: (the item as the
        #: upstream sent it, its decision). The echo finds its own here (:func:`_same_call`)
        #: instead of deciding it again, which would give it another invented call_id.
        self.keyless: list[tuple[dict[str, Any], tuple[Decision, str | None, str | None]]] = []
        #: call_id -> the key (item id) of the call decided under it: an echo that lists the call
        #: under another item id, or none (some servers mint one per phase), finds it by this.
        self.by_call_id: dict[str, str] = {}
        #: Of those, the ones let go (:meth:`let_go`): a later event of one goes the same way.
        self.keyless_gone: list[tuple[dict[str, Any], Decision]] = []
        self.ids = flow.ids()
        #: A stream lifts text as its events go; the echo then shows what the stream sent
        #: (message item id → the items that replace it), and never lifts on its own.
        self.streaming = False
        self.stream_lifts: dict[str, list[dict[str, Any]]] = {}
        self._item_ids = 0
        #: The response stopped short (``status`` ``incomplete`` — max_output_tokens —,
        #: ``failed``, ``cancelled``; a stream's ``error`` or end without a ``response.completed``):
        #: its calls' empty arguments are never completed, whatever an item's own status says.
        self.cut_off = False
        #: Item ids (call_ids) of calls that went out before the response's end was known: their
        #: empty arguments are never completed either.
        self.end_unknown: set[str] = set()
        #: The same, while such calls with no id (:func:`_key`) are resolved.
        self.end_unknown_keyless = False
        #: Calls are decided only to name back an upstream alias this flow sent
        #: (:meth:`FlowContext.name_back`), nothing else: for a turn whose request toolvocab did not
        #: read (its tools unknown), where only this flow's own aliases are known for what they are.
        self.names_only = False

    # tool calls left in text ------------------------------------------------------

    def new_item_id(self) -> str:
        """A stable id for a ``function_call`` item this answer gains (``fc_`` + 24 hex)."""
        self._item_ids += 1
        return "fc_" + stable_call_id(self.flow.flow_key + ":item", self._item_ids - 1)[3:]

    def call_item(self, call_id: str, name: str, namespace: str | None, arguments: dict[str, Any]) -> dict[str, Any]:
        """A completed ``function_call`` output item."""
        item: dict[str, Any] = {"type": "function_call", "id": self.new_item_id(), "call_id": call_id, "name": name}
        if namespace is not None:
            item["namespace"] = namespace
        item["arguments"] = jsonio.dumps(arguments).decode()
        item["status"] = "completed"
        return item

    def lift_text(self, text: str) -> tuple[str, list[dict[str, Any]]] | None:
        """``(text that remains, function_call items)`` for an answer text that is nothing but
        tool-call markup that resolves and validates (:func:`toolvocab.dialects.textcalls.lift`), else
        ``None``. A model's own call id (Kimi's) is kept; others get stable ids. Never for an
        answer the upstream keeps (:attr:`FlowContext.stored`): the calls would be none it knows."""
        if self.flow.stored:
            if textcalls.may_hold_markup(text):
                self.flow.note(KEPT_NOTE)
            return None
        found = textcalls.lift(text, self.flow, lambda i: self.ids.fix(None) or "")
        if found is None:
            return None
        remaining, calls = found
        return remaining, [self.call_item(c.id, c.name, c.namespace, c.arguments) for c in calls]

    def lift_output(self, output: list[Any]) -> bool:
        """A JSON answer's ``output``: when it has no call item and exactly one ``message``
        whose ``output_text`` (all parts, joined; no other part) is not blank, and that text is
        nothing but markup that lifts, the message is replaced by the calls (after a message
        holding the reasoning that remains, if any). True when changed."""
        if any(isinstance(i, dict) and isinstance(i.get("type"), str) and i.get("type") in _CALL_TYPES for i in output):
            return False
        messages = [k for k, i in enumerate(output) if isinstance(i, dict) and i.get("type") == "message" and _says(i)]
        if len(messages) != 1:
            return False  # none, or another message says something (a refusal, prose): text stays text
        k = messages[0]
        message = output[k]
        text = _message_text(message)
        if text is None or _annotated(message):
            return False  # a refusal or another part, or text that cites a source: not markup alone
        lifted = self.lift_text(text)
        if lifted is None:
            return False
        remaining, items = lifted
        new: list[Any] = []
        if remaining.strip():
            new.append(_with_text(message, remaining))
        output[k : k + 1] = new + items
        return True

    def expand_parallel_items(self, output: list[Any]) -> bool:
        """``multi_tool_use.parallel`` call items of a JSON answer replaced by their calls
        (BR-08); a wrapper whose parts do not all resolve stays whole, and so does every wrapper
        of an answer the upstream keeps (:attr:`FlowContext.stored`). True when changed."""
        if self.flow.stored:
            if any(_is_parallel_wrapper(item) for item in output):
                self.flow.note(KEPT_NOTE)
            return False
        changed = False
        k = 0
        while k < len(output):
            item = output[k]
            if (
                isinstance(item, dict)
                and item.get("type") == "function_call"
                and isinstance(item.get("name"), str)
                and item["name"].strip() == PARALLEL_WRAPPER
            ):
                wrapper = ToolCall.read(item["name"], item.get("arguments"), call_id=item.get("call_id"))
                expanded = textcalls.expand_parallel(wrapper, self.flow)
                if expanded is not None:
                    items = []
                    for sub, decision in expanded:
                        args = decision.arguments_after if decision.arguments_after is not None else sub.arguments
                        items.append(
                            self.call_item(
                                self.ids.fix(sub.id) or str(sub.id),  # wrappers without ids: call_0…
                                decision.target or sub.name,
                                decision.target_namespace,
                                args if isinstance(args, dict) else {},
                            )
                        )
                    output[k : k + 1] = items
                    k += len(items)
                    changed = True
                    continue
            k += 1
        return changed

    # decisions ---------------------------------------------------------------------------

    def _decide(self, item: dict[str, Any]) -> tuple[Decision, str | None, str | None]:
        """(decision, fitted arguments as JSON text or None, replacement call_id or None), once
        per item (keyed by item id, else call_id) however many events carry it."""
        key = _key(item)
        if isinstance(key, str) and key in self.decided:
            first = self._called[key]
            if _same_call(first, item, self.decided[key][0]):
                if not first.get("arguments") and item.get("arguments"):
                    self._called[key] = dict(item)  # the whole arguments, for the next comparison
                return self.decided[key]
            # Another call under an item id a call already has (ids are unique in an answer):
            # the first call's decision is not this one's, and which events are whose is not
            # known. It goes as it came but for this flow's alias, given back.
            self.flow.note(SAME_ID_NOTE)
            self.reused.add(key)
            decision = self.decided[key][0]
            name = item.get("name") if isinstance(item.get("name"), str) else decision.name
            back = self.flow.name_back(name, _namespace(item))
            return (
                decision.model_copy(
                    update={
                        "name": name,
                        "namespace": _namespace(item),
                        "action": Action.KEEP if back is None else Action.RENAME,
                        "step": Step.REVERSE_MAP if back is not None else decision.step,
                        "target": None if back is None else back[0],
                        "target_namespace": None if back is None else back[1],
                        "arguments_after": None,
                        "reason": SAME_ID_NOTE,
                    }
                ),
                None,
                None,
            )
        if isinstance(key, str):
            self._called[key] = dict(item)  # as the upstream sent it: the item is rewritten in place
            call_id = item.get("call_id")
            if isinstance(call_id, str) and call_id:
                # also when the call_id is the key: an echo may list it under an item id
                self.by_call_id.setdefault(call_id, key)
        new_id = self.ids.fix(item.get("call_id"))
        if new_id is not None:
            item = {**item, "call_id": new_id}
        kind = _CALL_TYPES[item["type"]]
        if kind is ToolKind.FREEFORM:
            call = ToolCall(
                name=item["name"],
                raw_arguments=item.get("input") if isinstance(item.get("input"), str) else None,
                id=item.get("call_id"),
                namespace=item.get("namespace") if isinstance(item.get("namespace"), str) else None,
                kind=kind,
            )
        else:
            raw_args = item.get("arguments")
            if isinstance(raw_args, (dict, list)):
                raw_args = jsonio.dumps(raw_args).decode()  # sent as an object (BR-21): a string for the client
            # "" / null / "null" / [] are empty forms: "{}" for a tool that requires nothing.
            call = ToolCall.read(
                item["name"],
                raw_args if "arguments" in item else ABSENT,
                call_id=item.get("call_id"),
                namespace=item.get("namespace"),
            )
            if (
                item.get("status") == "incomplete"
                or self.cut_off
                or (key in self.end_unknown if key is not None else self.end_unknown_keyless)
            ):
                call = call.model_copy(update={"truncated": True})  # cut off: never completed
        decision = self.resolve(call)
        if self.names_only:
            self.flow.withdraw([decision])
            back = self.flow.name_back(call.name, call.namespace)
            decision = decision.model_copy(
                update={
                    "action": Action.KEEP if back is None else Action.RENAME,
                    "step": Step.REVERSE_MAP if back is not None else decision.step,
                    "target": None if back is None else back[0],
                    "target_namespace": None if back is None else back[1],
                    "arguments_after": None,
                    "reason": "a turn toolvocab did not read: only this flow's own alias is named back",
                }
            )
        new_args = None
        if decision.changed and decision.arguments_after is not None:
            new_args = jsonio.dumps(decision.arguments_after).decode()
        result = (decision, new_args, new_id)
        if isinstance(key, str):
            self.decided[key] = result
        return result

    def let_go(self, item: dict[str, Any], decision: Decision) -> tuple[str, str | None] | None:
        """The call ``item`` went to the client as the upstream sent it, but for an upstream alias
        of the client's own tool named back (:meth:`FlowContext.name_back`, returned: ``(name,
        namespace)``, else ``None``): its decision leaves the record (the passed-through note
        says why) and the ``response.completed`` echo shows the call as it went out. A call whose
        events already went out changed (:attr:`delivered`; an event of it the upstream sent
        again is let go) keeps its decision: the client got it so."""
        key = _key(item)
        if not (isinstance(key, str) and key in self.delivered):
            self.flow.withdraw([decision])
        back = self.flow.name_back(item["name"], _namespace(item)) if isinstance(item.get("name"), str) else None
        as_sent = decision.model_copy(
            update={
                "action": Action.KEEP if back is None else Action.RENAME,
                "target": None if back is None else back[0],
                "target_namespace": None if back is None else back[1],
                "arguments_after": None,
            }
        )
        if isinstance(key, str):
            self.let_gone.add(key)
            self.decided[key] = (as_sent, None, None)
        else:  # no id: the echo finds it by what it is (apply_item)
            self.keyless.append((dict(item), (as_sent, None, None)))
            self.keyless_gone.append((dict(item), as_sent))
        return back

    def as_let_go(self, unit: Any) -> Any:
        """``unit`` (an event or frame) with the names of a call let go (:meth:`let_go`) as it went
        out: its ``output_item`` items and ``function_call_arguments.done`` name; ``unit`` itself
        when nothing in it changes."""
        data = unit.json()
        if not isinstance(data, dict):
            return unit
        kind = data.get("type")
        if kind in ("response.output_item.added", "response.output_item.done") and _is_call(data.get("item")):
            key = _key(data["item"])
            if key is None:
                # no id to find its decision by: what let_go gives it, an alias named back
                call = data["item"]
                target = (
                    self.flow.name_back(call["name"], _namespace(call)) if isinstance(call.get("name"), str) else None
                )
            else:
                back = self.decided.get(key)
                ok = back is not None and back[0].action is Action.RENAME and back[0].target is not None
                target = (back[0].target, back[0].target_namespace) if ok and back is not None else None
            if target is None:
                return unit
            item = {**data["item"], "name": target[0]}
            if target[1] is not None:
                item["namespace"] = target[1]
            else:
                item.pop("namespace", None)
            return unit.with_json({**data, "item": item})
        if kind == "response.function_call_arguments.done" and isinstance(data.get("name"), str):
            item_id = data.get("item_id")
            back = self.decided.get(item_id) if isinstance(item_id, str) and item_id not in self.reused else None
            if back is not None and back[0].action is Action.RENAME and back[0].target is not None:
                return unit.with_json({**data, "name": back[0].target})
        return unit

    def apply_item(
        self,
        item: dict[str, Any],
        *,
        with_arguments: bool = True,
        echo: bool = False,
        decided: tuple[Decision, str | None, str | None] | None = None,
    ) -> bool:
        """Rewrite one output item in place (name, namespace and, unless ``with_arguments`` is
        false, arguments); True when changed. An ``output_item.added`` item keeps its (empty)
        arguments: clients append the deltas to it. ``echo``: an item of a streamed answer's
        ``response`` echo, which shows a call as its events first went (:attr:`delivered`,
        :attr:`keyless`). ``decided``: the call's decision, already made from its events."""
        if (
            not isinstance(item.get("type"), str)
            or item.get("type") not in _CALL_TYPES
            or not isinstance(item.get("name"), str)
        ):
            return False
        key = _key(item)
        first = self.delivered.get(key) if echo and isinstance(key, str) else None
        if decided is not None:
            decision, new_args, new_id = decided
        elif first is not None and _same_call(self._called[key], item, first[0]):
            decision, new_args, new_id = first
        elif echo and not isinstance(key, str) and (mine := self._keyless_echo(item)) is not None:
            decision, new_args, new_id = mine
        elif echo and (mine := self._echo_by_call_id(item, key)) is not None:
            decision, new_args, new_id = mine
        else:
            decision, new_args, new_id = self._decide(item)
        changed = False
        if new_id is not None:
            item["call_id"] = new_id
            changed = True
        if with_arguments and not self.names_only and isinstance(item.get("arguments"), (dict, list)):
            item["arguments"] = jsonio.dumps(item["arguments"]).decode()  # BR-21
            changed = True
        if not decision.changed:
            return changed
        if decision.target is not None:
            item["name"] = decision.target
            if decision.target_namespace is not None:
                item["namespace"] = decision.target_namespace
            else:
                item.pop("namespace", None)
        if new_args is not None and with_arguments:
            item["arguments"] = new_args
        return True

    def was_let_go(self, item: dict[str, Any]) -> bool:
        """``item`` (a call's event item) belongs to a call let go (:meth:`let_go`): by its id, or,
        with none (:func:`_key`), by what it is (:func:`_same_call`, its name as the upstream sent it)."""
        key = _key(item)
        if key is not None:
            return key in self.let_gone
        return any(_same_call(first, item, decision) for first, decision in self.keyless_gone)

    def _echo_by_call_id(self, item: dict[str, Any], key: str | None) -> tuple[Decision, str | None, str | None] | None:
        """The decision of the call the echoed ``item`` lists under another item id than its
        events had, or none, found by its ``call_id`` (:attr:`by_call_id`; the same call by
        :func:`_same_call`, and each only once); ``None`` when its own key finds one, or nothing
        does. Deciding it again would count its call_id twice and invent another."""
        if isinstance(key, str) and key in self.decided:
            return None
        call_id = item.get("call_id")
        sent = self.by_call_id.get(call_id) if isinstance(call_id, str) and call_id else None
        if sent is None or sent == key or sent not in self.decided:
            return None
        decided = self.delivered.get(sent) or self.decided[sent]
        if not _same_call(self._called[sent], item, decided[0]):
            return None
        del self.by_call_id[call_id]
        return decided

    def _keyless_echo(self, item: dict[str, Any]) -> tuple[Decision, str | None, str | None] | None:
        """The decision of the first call in :attr:`keyless` that ``item`` (an echoed call with
        neither id) may be (:func:`_same_call`), taken off the list; ``None`` when none is."""
        for k, (first, decided) in enumerate(self.keyless):
            if _same_call(first, item, decided[0]):
                del self.keyless[k]
                return decided
        return None

    def rewrite_response_object(self, response: dict[str, Any]) -> bool:
        """Rewrite ``output[]`` calls and the ``tools`` / ``tool_choice`` echo in place."""
        changed = False
        status = response.get("status")
        if status in _CUT_STATUSES or (not self.streaming and status != "completed"):
            self.cut_off = True  # a JSON answer says its end only here
        output = response.get("output")
        # the items as they came, held (not only their ids) so that no item made below can be
        # given the id of one it replaced, freed meanwhile, and taken for it
        before = list(output) if isinstance(output, list) else []
        if isinstance(output, list) and self.stream_lifts:
            # The echo shows what the stream sent: the lifted message's items (copies).
            for k in range(len(output) - 1, -1, -1):
                item = output[k]
                if (
                    isinstance(item, dict)
                    and item.get("type") in ("message", "function_call")
                    and item.get("id") in self.stream_lifts
                ):
                    output[k : k + 1] = jsonio.loads(jsonio.dumps(self.stream_lifts[item["id"]]))
                    changed = True
        elif isinstance(output, list) and not self.streaming:
            changed |= self.expand_parallel_items(output)
            if response.get("status") == "completed":  # incomplete, failed…: perhaps cut short, never lifted
                changed |= self.lift_output(output)
        old_items = {id(i) for i in before}
        for item in as_list(response.get("output")):
            # Items made here are already decided (and their ids counted).
            if isinstance(item, dict) and id(item) in old_items:
                changed |= self.apply_item(item, echo=self.streaming)
                if self.reverse:
                    changed |= _unrename_loaded(item, self.reverse)
        if self.reverse:
            changed |= _unrename_echo(response, self.reverse)
        sentence = self.plan.prompt_sentence
        instructions = response.get("instructions")
        if sentence and isinstance(instructions, str) and sentence in instructions:
            # The echo shows the client its own instructions, not the sentence toolvocab added
            # (which names tools by their upstream names): none when it sent none (_add_sentence
            # sent the sentence alone), "" when it sent "" ("\n\n" and the sentence).
            response["instructions"] = (
                None if instructions == sentence else instructions.replace("\n\n" + sentence, "").replace(sentence, "")
            )
            changed = True
        return changed


def _call_id_items(body: JSON) -> list[dict[str, Any]]:
    """Every ``input`` item carrying a string ``call_id`` (calls and their outputs, of any type)."""
    items = body.get("input") if isinstance(body, dict) else None
    return (
        [i for i in items if isinstance(i, dict) and isinstance(i.get("call_id"), str)]
        if isinstance(items, list)
        else []
    )


def _history_aliases(body: JSON) -> dict[str, str]:
    """Aliases for the replayed ``call_id`` values the Responses API rejects (over 64
    characters: :func:`toolvocab.engine.ids.responses_accepts`); ``{}`` for none."""
    return id_aliases([i["call_id"] for i in _call_id_items(body)], responses_accepts)


def _message_text(item: dict[str, Any]) -> str | None:
    """The text of a ``message`` output item made only of ``output_text`` parts, else ``None``."""
    parts = item.get("content")
    if not isinstance(parts, list) or not parts:
        return None
    if not all(
        isinstance(p, dict) and p.get("type") == "output_text" and isinstance(p.get("text"), str) for p in parts
    ):
        return None
    return "".join(p["text"] for p in parts)


def _says(item: dict[str, Any]) -> bool:
    """True for a ``message`` item that holds anything but blank ``output_text`` parts: text, a
    ``refusal`` part, or a part of another type (whatever it holds may make markup prose)."""
    parts = item.get("content")
    if not isinstance(parts, list):
        return parts not in (None, "")
    return any(
        not (isinstance(p, dict) and p.get("type") == "output_text" and isinstance(p.get("text"), str))
        or p["text"].strip()
        for p in parts
    )


def _other_parts(item: dict[str, Any]) -> bool:
    """True for a ``message`` item with a part that is not ``output_text`` (a ``refusal``…)."""
    parts = item.get("content")
    return isinstance(parts, list) and any(not (isinstance(p, dict) and p.get("type") == "output_text") for p in parts)


def _annotated(item: dict[str, Any]) -> bool:
    """True for a ``message`` item one of whose parts has ``annotations`` (a file or URL
    citation: the text quotes a source, and markup in it is quoted)."""
    parts = item.get("content")
    return isinstance(parts, list) and any(isinstance(p, dict) and p.get("annotations") for p in parts)


def _with_text(message: dict[str, Any], text: str) -> dict[str, Any]:
    """``message`` with one ``output_text`` part holding ``text`` (the first part's other
    fields kept)."""
    first = message["content"][0] if isinstance(message.get("content"), list) and message["content"] else {}
    return {**message, "content": [{**first, "type": "output_text", "text": text, "annotations": []}]}


def _unrename_tools(tools: Any, reverse: dict[str, str]) -> bool:
    """Give a list of tool definitions (``function`` tools, and those inside ``namespace``
    tools) the client's names back, in place; True when one changed."""
    changed = False
    for tool in as_list(tools):
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function":
            changed |= _rename_named(tool, None, reverse)
        elif tool.get("type") == "namespace":
            for inner in as_list(tool.get("tools")):
                if isinstance(inner, dict) and inner.get("type") == "function":
                    changed |= _rename_named(inner, tool.get("name"), reverse)
    return changed


def _unrename_loaded(item: Any, reverse: dict[str, str]) -> bool:
    """Give a ``tool_search_output`` output item's loaded ``tools`` the client's names back, in
    place; True when one changed."""
    return (
        isinstance(item, dict)
        and item.get("type") == TOOL_SEARCH_OUTPUT
        and _unrename_tools(item.get("tools"), reverse)
    )


def _unrename_echo(response: dict[str, Any], reverse: dict[str, str]) -> bool:
    """Give the echoed ``tools`` and ``tool_choice`` the client's names back."""
    changed = _unrename_tools(response.get("tools"), reverse)
    choice = response.get("tool_choice")
    if isinstance(choice, dict):
        if choice.get("type") == "function":
            changed |= _rename_named(choice, choice.get("namespace"), reverse)
        for entry in as_list(choice.get("tools")):
            if isinstance(entry, dict) and entry.get("type") == "function":
                changed |= _rename_named(entry, entry.get("namespace"), reverse)
    return changed


def _not_a_call_done(raw: bytes) -> bool:
    """``raw`` is an ``output_item.done`` event that cannot be a tool call's: no call type
    (``function_call``, ``custom_tool_call``: both end ``_call"``) and no ``\\u`` escape that could
    spell one. Such an event (a message's end carries its whole text) needs no parse."""
    return (
        b"output_item.done" in raw
        and b'_call"' not in raw
        and b'"response"' not in raw  # a response.completed whose text quotes the event's name
        and b"tool_search" not in raw  # loaded tools: their names may be aliases
        and b"\\u" not in raw
    )


#: The record's note for a tool call that came under an item id another call already has.
SAME_ID_NOTE = "a tool call came under an item id another call of the answer already has: it went as it came"


def _same_call(first: dict[str, Any], item: dict[str, Any], decision: Decision) -> bool:
    """``item`` (an event's output item, or its echo) may be the call ``first`` was read from
    (as the upstream sent it) under the same item id, ``decision`` its decision: its ``type``,
    the ``call_id`` the upstream gave it (a missing one is none), its name and namespace (or the
    ones ``decision`` gave it: an item read again after its rewrite) are not another's, and
    their ``arguments``, when both are whole (an ``output_item.added`` carries ``""``), are the
    same."""
    for field in ("type", "call_id"):
        if first.get(field) != item.get(field):
            return False
    named = (item.get("name"), item.get("namespace"))
    if named != (first.get("name"), first.get("namespace")) and not (
        decision.changed and named == (decision.target, decision.target_namespace)
    ):
        return False
    a, b = first.get("arguments"), item.get("arguments")
    return not (a and b and a != b)


def _key(item: dict[str, Any]) -> str | None:
    """What identifies an output item's call in an answer: its item id, else its ``call_id``,
    each only as a non-empty string; ``None`` when it has neither (an empty id is none: two calls
    sent with ``"call_id": ""`` are two calls)."""
    for field in ("id", "call_id"):
        value = item.get(field)
        if isinstance(value, str) and value:
            return value
    return None


def _namespace(item: dict[str, Any]) -> str | None:
    namespace = item.get("namespace")
    return namespace if isinstance(namespace, str) else None


def _is_call(item: Any) -> bool:
    """``item`` is a tool call output item (``function_call``, ``custom_tool_call``)."""
    return isinstance(item, dict) and isinstance(item.get("type"), str) and item["type"] in _CALL_TYPES


def _empty_call_done(unit: Any) -> bool:
    """``unit`` is a function call's ``response.output_item.done`` whose arguments are an empty
    form (:meth:`~toolvocab.engine.models.ToolCall.read`): ``""``, ``null``, ``[]``…"""
    data = unit.json()
    if not isinstance(data, dict) or data.get("type") != "response.output_item.done":
        return False
    item = data.get("item")
    return (
        isinstance(item, dict)
        and item.get("type") == "function_call"
        and isinstance(item.get("name"), str)
        and "arguments" in item
        and ToolCall.read(item["name"], item["arguments"]).empty_arguments
    )


def _cut_short(kind: Any, data: Any) -> bool:
    """The event that ends a response (an ``error`` or one of :data:`_TERMINAL_EVENTS`) says the
    answer stopped short: ``error``, ``response.incomplete``, ``response.failed``, a ``response``
    whose ``status`` is not ``completed``, or a ``response.done`` that gives none."""
    if kind not in ("response.completed", "response.done"):
        return True
    response = data.get("response") if isinstance(data, dict) else None
    status = response.get("status") if isinstance(response, dict) else None
    if not isinstance(status, str):
        return kind == "response.done"  # response.completed says it by its type
    return status != "completed"


def _output_index(unit: Any) -> Any:
    """The ``output_index`` of a stream event (``None`` when it has none, or is not JSON)."""
    data = unit.json()
    return data.get("output_index") if isinstance(data, dict) else None


def _item_name(held: list[Any]) -> str:
    """The tool name a held call's ``response.output_item.added`` carries (``?`` when unreadable)."""
    data = held[0].json() if held else None
    item = data.get("item") if isinstance(data, dict) else None
    name = item.get("name") if isinstance(item, dict) else None
    return name if isinstance(name, str) else "?"


class ResponsesStream(EventStreamRewriter):
    """Rewrites a Responses SSE stream (also used frame by frame for the WebSocket path).

    Events go out at once, except a tool call's: from its ``response.output_item.added`` (named
    or not) to its ``response.output_item.done`` the events are held (its arguments may need
    fitting), then it is resolved once from the ``.done`` item and sent — byte-identical when
    nothing changes; else with the new name (and namespace) in both items, and fitted arguments
    whole in the first argument delta (later deltas empty, so ``sequence_number`` stays
    contiguous), in ``.done`` and in the item. Calls whose events interleave are held together
    until every one is done, and each is resolved from its own events (by ``output_index``). A
    call's ``.done`` that comes without its ``.added`` (events out of order) gets only an upstream
    alias of this flow named back (:attr:`~toolvocab.engine.models.Step.REVERSE_MAP`, no other
    change: the events before it went out as sent); any other repair of it is given up. The
    ``response`` object of ``response.completed`` (and its siblings) gets the same names and the
    client's tool names in its ``tools`` / ``tool_choice`` echo.
    """

    #: A call starts with ``output_item.added`` and ends with ``output_item.done``; echoes sit in
    #: events with a ``response`` object (other events pass unparsed).
    MARKERS = (b"output_item.", b'"response"')

    def __init__(self, flow: FlowContext) -> None:
        super().__init__()
        self.core = ResponsesCore(flow)
        self.core.streaming = True
        self._held: list[SSEEvent] | None = None
        #: The done calls of a hold in which one has empty arguments (then any comment), until the
        #: next event: the response's end says whether it stopped short (a cut-off call's empty
        #: arguments are never written as ``{}``; :data:`_CUT_STATUSES`); any other event leaves
        #: that unknown (:meth:`_end_awaiting`).
        self._awaiting: list[Any] | None = None
        self._awaited = 0  # how many of them are the hold's
        self._open: list[Any] = []  # output_index of each held call not done yet
        self._calls: list[Any] = []  # output_index of each call in the hold, in order
        #: Item ids of calls let go before their ``output_item.done``, named back
        #: (:meth:`_let_go`): their later events are read for the name they carry.
        self._gone: set[str] = set()
        # Tool calls left in text: the message item being watched and its hold.
        self._no_lift = flow.tools is None or flow.stops or flow.limited  # nothing will be lifted: no text held
        self._text: textcalls.TextHold | None = None
        self._msg_index: Any = None
        self._index_shift = 0  # items added by unwrapped parallel wrappers
        self._seq_shift = 0  # events added by them
        if flow.plan.reverse_map:
            # A call's function_call_arguments.done may name it (some servers, older SDK types):
            # one that comes outside its call's events (after its .done, after an error) is read
            # for this flow's alias too.
            self._letters += (b"function_call_arguments.done",)
            if self._markers is not None:
                self._markers += (b"function_call_arguments.done",)

    def holding(self) -> bool:
        """A call is being held, a message's text is watched, or later events move up (a
        parallel wrapper was unwrapped): every event goes to :meth:`on_event`."""
        return (
            self._held is not None
            or self._awaiting is not None
            or self._text is not None
            or bool(self._index_shift or self._seq_shift)
            or bool(self._gone)
        )

    def has_held(self) -> bool:
        """A call's events or a message's text that may be markup are held."""
        return bool(self._held) or bool(self._awaiting) or (self._text is not None and bool(self._text.held))

    def held(self) -> list[bytes]:
        """Raw bytes of the held events (clears them)."""
        return [e.raw for e in self.held_units()]

    def on_event(self, event: SSEEvent) -> list[bytes]:
        """Hold a call's events until its ``output_item.done``; rewrite response echoes."""
        return [e.raw for e in self.on_unit(event)]

    def on_unit(self, event: Any) -> list[Any]:
        """Like :meth:`on_event` over any object with ``json()``, ``raw`` and ``with_json()``
        (an :class:`SSEEvent` or a WebSocket frame); returns units to send, in order."""
        if self._awaiting is not None:
            data = event.json()
            if data is None:  # a comment, a keep-alive: no news of the response's end
                self._awaiting.append(event)
                return []
            kind = data.get("type") if isinstance(data, dict) else None
            ends = kind == "error" or kind in _TERMINAL_EVENTS
            return self._end_awaiting(cut=_cut_short(kind, data) if ends else None) + self.on_unit(event)
        if self._index_shift or self._seq_shift:
            # A parallel wrapper went out as several items: later items and events move up.
            data = event.json()
            if isinstance(data, dict):
                fixed = dict(data)
                if isinstance(fixed.get("output_index"), int):
                    fixed["output_index"] += self._index_shift
                if isinstance(fixed.get("sequence_number"), int):
                    fixed["sequence_number"] += self._seq_shift
                if fixed != data:
                    event = event.with_json(fixed)
        return self._dispatch(event)

    def _dispatch(self, event: Any) -> list[Any]:
        if self._held is None and self._text is None and _not_a_call_done(event.raw):
            return [event]  # a message's or a reasoning item's end: its whole text, left unread
        data = event.json()
        kind = data.get("type") if isinstance(data, dict) else None
        if self._text is not None:
            return self._on_text(event, data, kind)
        if self._held is not None:
            if kind == "error" or kind in _TERMINAL_EVENTS:
                # The open calls will not complete: they go as held, unchanged (the calls done
                # meanwhile are resolved), then this event.
                held, self._held = self._held, None
                return self._release_calls(held, cut=kind) + self._dispatch(event)
            self._held.append(event)
            index = data.get("output_index") if kind is not None else None
            if kind == "response.output_item.added" and _is_call(data.get("item")):
                if type(index) is not int or index in self._calls or any(type(i) is not int for i in self._calls):
                    # Two calls' events that their output_index cannot tell apart: none is changed.
                    held, self._held = self._held, None
                    self.unrepaired.append(
                        f"the tool calls {_item_name(held)} and {_item_name([event])} came interleaved with no "
                        "output_index to tell their events apart"
                    )
                    return self._let_go(held)
                self._open.append(index)  # another call's events interleave with the held one's
                self._calls.append(index)
            elif kind == "response.output_item.done" and index in self._open:
                self._open.remove(index)
                if not self._open and any(map(_empty_call_done, self._held)):
                    # Whether "" becomes {} waits for the next event (:meth:`_end_awaiting`).
                    self._awaiting, self._awaited, self._held = self._held, len(self._held), None
                    return []
                if not self._open:
                    out = self._release_calls(self._held)
                    self._held = None  # only now: if a release raised, held() still has every unit
                    return out
            return []
        if self._gone:
            # A call let go before its end is still sending: its name goes back in each event.
            if kind == "response.function_call_arguments.done":
                return [self.core.as_let_go(event)]
            if kind == "response.output_item.done" and _is_call(data.get("item")):
                self._gone.discard(data["item"].get("id"))
            elif kind in _TERMINAL_EVENTS or kind == "error":
                self._gone.clear()
        if kind == "response.output_item.added":
            item = data.get("item")
            if _is_call(item):
                self._no_lift = True  # real calls: text is only text (as in a JSON answer)
                self._held = [event]
                self._open = [data.get("output_index")]
                self._calls = list(self._open)
                return []
            if (
                isinstance(item, dict)
                and item.get("type") == "message"
                and not self._no_lift
                and not self.core.flow.stored  # nothing is lifted: the text is never held
                and not item.get("content")
            ):
                # Goes out at once (no text in it); its text is watched.
                self._text = textcalls.TextHold()
                self._msg_index = data.get("output_index")
                return [event]
            if isinstance(item, dict) and item.get("type") == "message" and item.get("content"):
                # A message that comes with content (text, a blank part whose deltas are not
                # watched, a refusal): not the one text, so nothing is lifted in this answer.
                self._no_lift = True
        if kind == "response.output_item.done" and _is_call(data.get("item")):
            return self._release_alone(event, data["item"])
        if (
            kind in ("response.output_item.added", "response.output_item.done")
            and self.core.reverse
            and isinstance(data.get("item"), dict)
            and data["item"].get("type") == TOOL_SEARCH_OUTPUT
        ):
            item = jsonio.loads(jsonio.dumps(data["item"]))
            if _unrename_loaded(item, self.core.reverse):
                return [event.with_json({**data, "item": item})]
        if kind == "response.function_call_arguments.done":
            return [self._args_done_back(event)]
        if kind in _RESPONSE_EVENTS and isinstance(data.get("response"), dict):
            response = jsonio.loads(jsonio.dumps(data["response"]))
            if self.core.rewrite_response_object(response):
                return [event.with_json({**data, "response": response})]
        return [event]

    def _release_calls(self, held: list[Any], *, cut: str | None = None) -> list[Any]:
        """The held events of one call (:meth:`_release`), or of several whose events
        interleaved: each call resolved from its own events (those with its ``output_index``;
        no parallel wrapper unwrapped, the others' places would move), every event in its place.
        A call whose events do not end with its ``output_item.done`` (``cut``: the type of the
        event that ended the response first; or an event of it came after) goes as it came,
        noted, and is echoed so."""
        if len(self._calls) < 2:
            if not cut:
                return self._release(held)
            self.unrepaired.append(
                f"a {cut} event came before the tool call {_item_name(held)}'s response.output_item.done "
                "(events out of order)"
            )
            return self._let_go(held)
        groups: dict[int, list[Any]] = {index: [] for index in self._calls}  # distinct ints
        for unit in held:
            index = _output_index(unit)
            if type(index) is int and index in groups:
                groups[index].append(unit)
        released = {}
        gone: dict[int, Any] = {}  # id of a unit of a call let go -> the unit as it goes out
        for index, units in groups.items():
            last = units[-1].json() if units else None
            if isinstance(last, dict) and last.get("type") == "response.output_item.done":
                released[index] = iter(self._release(units, expand=False))
            else:
                self.unrepaired.append(
                    f"a {cut} event came before the tool call {_item_name(units)}'s response.output_item.done "
                    "(events out of order)"
                    if cut
                    else f"an event of the tool call {_item_name(units)} came after its response.output_item.done"
                )
                gone.update(zip(map(id, units), self._let_go(units)))
        return [
            next(released[index])
            if type(index := _output_index(u)) is int and index in released
            else gone.get(id(u), u)
            for u in held
        ]

    def _end_awaiting(self, *, cut: bool | None) -> list[Any]:
        """The awaited calls resolved at the next event, then the comments after them; the units
        to send, in order. ``cut``: the event ends the response and says it stopped short (their
        empty arguments stay as sent) or not (``False``: ``{}`` where the tool requires nothing);
        ``None``: another event came first, so how the response ends is not known when they must
        go (their order kept): their empty arguments stay as sent, as an Anthropic block's do
        when another block follows it. If this raises, every awaited unit is still held."""
        awaiting, self._awaiting = self._awaiting or [], None
        if cut:
            self.core.cut_off = True
        elif cut is None:
            for unit in awaiting[: self._awaited]:
                data = unit.json()
                item = data.get("item") if isinstance(data, dict) else None
                key = _key(item) if _is_call(item) else None
                if isinstance(key, str):
                    self.core.end_unknown.add(key)
                elif _is_call(item):
                    self.core.end_unknown_keyless = True
        try:
            out = self._release_calls(awaiting[: self._awaited])
            self.core.end_unknown_keyless = False
            for unit in awaiting[self._awaited :]:
                out += self.on_unit(unit)
        except BaseException:
            self._held, self._text, self._awaiting = None, None, awaiting
            raise
        finally:
            self.core.end_unknown_keyless = False
        return out

    def _let_go(self, units: list[Any]) -> list[Any]:
        """The calls whose ``output_item.added`` is among ``units`` go as they came, an upstream
        alias of the client's own tool named back (:meth:`ResponsesCore.let_go`; said at the end
        of the last ``unrepaired`` sentence, the give-up's), and are echoed so; ``units`` as they
        go out, in order."""
        backs: list[str] = []
        for unit in units:
            data = unit.json()
            item = data.get("item") if isinstance(data, dict) else None
            if _is_call(item) and isinstance(item.get("name"), str):
                back = self.core.let_go(item, self.core._decide(item)[0])
                if back is not None and isinstance(item.get("id"), str):
                    self._gone.add(item["id"])
                if back is not None:
                    backs.append(join_namespace(back[1], back[0]))
        if backs and self.unrepaired:
            self.unrepaired[-1] += NAMED_BACK + ", ".join(dict.fromkeys(backs))  # one per call, not per event
        for unit in units:
            data = unit.json()
            if (
                isinstance(data, dict)
                and data.get("type") == "response.output_item.done"
                and _is_call(data.get("item"))
            ):
                self._gone.discard(data["item"].get("id"))
        return [self._args_done_back(self.core.as_let_go(u)) for u in units]

    def _args_done_back(self, unit: Any) -> Any:
        """``unit`` as it is, or, for a ``response.function_call_arguments.done`` whose ``name``
        is still an upstream alias of this flow (its call let go, decided before, or named
        otherwise in its item), that name given back (:meth:`FlowContext.name_back`): the client
        never sees a transport alias, and nothing else changes."""
        data = unit.json()
        if not (
            isinstance(data, dict)
            and data.get("type") == "response.function_call_arguments.done"
            and isinstance(data.get("name"), str)
        ):
            return unit
        unit = self.core.as_let_go(unit)
        data = unit.json()
        back = self.core.flow.name_back(data["name"]) if isinstance(data, dict) else None
        return unit if back is None else unit.with_json({**data, "name": back[0]})

    def _release_alone(self, event: Any, item: dict[str, Any]) -> list[Any]:
        """A call's ``response.output_item.done`` that came without its ``.added``: what went
        before it went out as sent, so only an upstream alias of this flow is named back (no
        argument, id or other change); any other repair is given up."""
        if not isinstance(item.get("name"), str):
            return [event]
        if self.core.was_let_go(item):
            # Its .added went out let go (a stall, a give-up): its end goes the same way, named
            # back and nothing else (a parallel wrapper stays whole: its place is one item).
            return [self.core.as_let_go(event)]
        decision, new_args, new_id = self.core._decide(item)
        if not decision.changed or (decision.step == Step.REVERSE_MAP and new_args is None and new_id is None):
            return self._release([event])
        self.unrepaired.append(
            f"the tool call {item['name']}'s response.output_item.done came without its "
            "response.output_item.added (events out of order)"
        )
        back = self.core.let_go(item, decision)
        if back is not None:
            self.unrepaired[-1] += NAMED_BACK + join_namespace(back[1], back[0])
        return [self.core.as_let_go(event)]

    def held_units(self) -> list[Any]:
        """The held units themselves (clears them); for the WebSocket path."""
        awaiting, self._awaiting = self._awaiting or [], None
        if awaiting:
            return awaiting  # nothing else is held meanwhile
        held, self._held = self._held or [], None
        text = self._text.release() if self._text is not None else []
        self._text = None
        return text + held

    def let_go(self, why: str) -> list[bytes]:
        """What is held, given up (:meth:`EventStreamRewriter.let_go`; :meth:`let_go_units`)."""
        return [u.raw for u in self.let_go_units(why)]

    def give_back(self, why: str) -> list[bytes]:
        """What is held, given up (:meth:`let_go`), then only aliases named back
        (:meth:`read_names_only`): :meth:`EventStreamRewriter.give_back`."""
        out = self.let_go(why)
        self.read_names_only()
        self.repairs_after_let_go = False  # a later stall's note: nothing after this is repaired
        return out

    def read_names_only(self) -> None:
        """From now on only an upstream alias this flow sent is named back, in every call and the
        echo (:attr:`ResponsesCore.names_only`); no text is lifted: the rest of a turn (or a turn)
        whose request toolvocab did not read."""
        self.core.names_only = True
        self._no_lift = True

    def let_go_units(self, why: str) -> list[Any]:
        """What is held, given up now, as units to send in order: the held calls as they came but
        for an upstream alias named back, in their later events and the echo too
        (:meth:`_let_go`); held text as it came, never lifted. The rewrite goes on: calls done
        but awaiting the response's end go so too, and the events after them are read."""
        if self._awaiting:
            awaiting = self._awaiting
            out = self._let_go_said(awaiting[: self._awaited], why)  # if this raises, all is still held
            self._awaiting = None
            for unit in awaiting[self._awaited :]:
                out += self.on_unit(unit)
            return out + self.let_go_units(why)
        held = self._held or []
        let = self._let_go_said(held, why) if held else []  # if this raises, all is still held
        self._held = None
        text = self._text.release() if self._text is not None else []
        self._text = None
        self._no_lift = True
        return text + let

    def _let_go_said(self, held: list[Any], why: str) -> list[Any]:
        """:meth:`_let_go` of ``held``, its ``unrepaired`` sentence said (and taken back if it raises)."""
        self.unrepaired.append(f"{why} while the tool call {_item_name(held)} was held")
        try:
            return self._let_go(held)
        except BaseException:
            self.unrepaired.pop()
            raise

    def at_end(self) -> list[bytes]:
        """End of stream: what is held goes out as it came, an upstream alias of the client's
        own tool named back (:meth:`_let_go`); calls awaiting the response's end are resolved as
        cut off (no event said it completed)."""
        if self._awaiting is not None:
            out = [u.raw for u in self._end_awaiting(cut=True)]
            return out + self.at_end()
        if self._held:
            self.unrepaired.append(
                f"the rewrite reached the end of the stream before the tool call {_item_name(self._held)}'s response.output_item.done"
            )
            held, self._held = self._held, None
            return [e.raw for e in self.held_units() + self._let_go(held)]
        return self.held()

    def _expand_parallel(self, held: list[Any], item: dict[str, Any]) -> list[Any] | None:
        """A held ``multi_tool_use.parallel`` item as one item per call (BR-08), or ``None``
        (a part does not resolve: the wrapper stays whole). Later ``output_index`` and
        ``sequence_number`` values move up by what was added; the echo shows the same items."""
        if self.core.flow.stored:
            self.core.flow.note(KEPT_NOTE)
            return None
        if not (isinstance(item.get("id"), str) and item["id"]):
            return None  # the echo could not show its calls in its place: the wrapper stays whole
        arguments = item.get("arguments")
        text = arguments if isinstance(arguments, str) else jsonio.dumps(arguments).decode()
        expanded = textcalls.expand_parallel(
            ToolCall.read(item["name"], text, call_id=item.get("call_id")), self.core.flow
        )
        if expanded is None:
            return None
        items = []
        for sub, decision in expanded:
            args = decision.arguments_after if decision.arguments_after is not None else sub.arguments
            items.append(
                self.core.call_item(
                    self.core.ids.fix(sub.id) or str(sub.id),  # wrappers without ids: call_0…
                    decision.target or sub.name,
                    decision.target_namespace,
                    args if isinstance(args, dict) else {},
                )
            )
        first = held[0].json()
        index = (
            first.get("output_index") if isinstance(first, dict) and isinstance(first.get("output_index"), int) else 0
        )
        beats: list[dict[str, Any]] = []  # keep-alive events held among the call's: they go out first
        for unit in held:
            d = unit.json()
            if isinstance(d, dict) and d.get("type") == "keepalive":
                beats.append(dict(d))
            elif d is not None and not (isinstance(d, dict) and d.get("output_index") == index):
                return None  # another event among the call's: the wrapper stays whole, every event in place
        seq = _first_sequence(held)
        events = beats + _parallel_events(items, index)
        out: list[Any] = []
        for body in events:
            if seq is not None:
                body["sequence_number"] = seq
                seq += 1
            out.append(_unit_like(held[0], body))
        data_units = [u for u in held if u.json() is not None]
        out += [u for u in held if u.json() is None]  # comments and keep-alives keep going out
        if isinstance(item.get("id"), str):
            self.core.stream_lifts[item["id"]] = items
        self._index_shift += len(items) - 1
        if seq is not None:
            self._seq_shift += len(events) - len(data_units)
        return out

    # -- tool calls left in text ------------------------------------------------------

    def _give_up(self) -> list[Any]:
        """No lift in this answer: the held text events go out as they came."""
        held = self._text.release() if self._text is not None else []
        self._text = None
        self._no_lift = True
        return held

    def _on_text(self, event: Any, data: Any, kind: Any) -> list[Any]:
        """An event while a message's text is watched (and, from where markup may start,
        held until the answer ends)."""
        text = self._text
        assert text is not None
        if data is None and (event.raw if isinstance(event, JSONFrame) else event.data) is not None:
            # Not JSON: it may hold the text that makes the rest prose, so nothing is lifted
            return self._give_up() + [event]
        index = data.get("output_index") if isinstance(data, dict) else None
        if (
            kind == "response.output_text.delta"
            and index == self._msg_index
            and data.get("content_index", 0) == 0
            and isinstance(data.get("delta"), str)
        ):
            state, out = text.add(data["delta"], event)
            if state == textcalls.PROSE:
                self._text = None
                self._no_lift = True
            return out
        if kind in _TERMINAL_EVENTS and not _cut_short(kind, data) and text.held is not None:
            # Lifted at a complete answer only (the end's type and its response's status): an
            # incomplete one (max_output_tokens) may have stopped mid-answer, and its held text
            # goes out as it came below.
            return self._lift_held(event, data)
        if (
            kind == "error"
            or kind in _TERMINAL_EVENTS
            or kind == "response.output_item.added"
            or (
                kind == "response.content_part.added" and index == self._msg_index and data.get("content_index", 0) != 0
            )
            or (isinstance(data, dict) and index == self._msg_index and kind not in _MESSAGE_EVENTS)
        ):
            # Another item, a second content part, something unexpected in the message, an error
            # or the end: no lift; the text goes out as it came, then this event as usual.
            return self._give_up() + self._dispatch(event)
        if text.held is not None:
            return text.keep(event)
        if kind == "response.output_item.done" and index == self._msg_index:
            # The message ended as whitespace or reasoning: no markup to lift (a blank one may
            # be followed by another message) — unless the item says more than its deltas did
            # (text sent only whole, a refusal part): then it is the one message with text.
            item = data.get("item")
            if text.watch.text.strip() or (isinstance(item, dict) and _says(item)):
                self._no_lift = True
            self._text = None
        return [event]

    def _lift_held(self, terminal: Any, data: dict[str, Any]) -> list[Any]:
        """At the end of the answer: the held text lifted into ``function_call`` items, then
        ``terminal`` (its echo showing the same items); or everything as it came."""
        hold = self._text
        assert hold is not None and hold.held is not None
        held = hold.held
        message: dict[str, Any] | None = None
        item_id: Any = None
        beats: list[dict[str, Any]] = []  # keep-alive events held among the message's
        for unit in held:
            d = unit.json()
            if d is not None and not (
                isinstance(d, dict) and d.get("type") in _MESSAGE_EVENTS and d.get("output_index") == self._msg_index
            ):
                if isinstance(d, dict) and d.get("type") == "keepalive":
                    beats.append(dict(d))  # OpenAI's heartbeat on a long stream: it goes out first
                    continue
                # another event among the message's (an annotation without its output_index…):
                # what it says is not known, so the text is not markup alone
                return self._give_up() + self._dispatch(terminal)
            if isinstance(d, dict) and d.get("type") == "response.output_item.done" and isinstance(d.get("item"), dict):
                message = d["item"]
            if isinstance(d, dict) and isinstance(d.get("item_id"), str):
                item_id = d["item_id"]
            part = d.get("part") if isinstance(d, dict) else None
            if isinstance(part, dict) and (part.get("annotations") or part.get("type") != "output_text"):
                return self._give_up() + self._dispatch(terminal)  # a citation or a refusal: not markup alone
        if message is not None and (_other_parts(message) or _annotated(message)):
            return self._give_up() + self._dispatch(terminal)
        known = message.get("id") if message is not None else item_id
        if not (isinstance(known, str) and known):
            # Without the message's id the response.completed echo cannot show the lifted
            # items in its place: the stream and the echo would disagree. Left as it came.
            return self._give_up() + self._dispatch(terminal)
        lifted = self.core.lift_text(hold.watch.text)
        if lifted is None:
            return self._give_up() + self._dispatch(terminal)
        remaining, items = lifted
        extra = hold.remaining_after_release(remaining)
        kept_text = hold.watch.text[: hold.released] + extra
        m = self._msg_index if isinstance(self._msg_index, int) else 0
        if message is None:
            message = {
                "type": "message",
                "id": item_id,
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": ""}],
            }
        message = _with_text({**message, "status": "completed"}, kept_text)
        item_id = message.get("id", item_id)
        template = held[0]
        seq = _first_sequence(held)
        events: list[dict[str, Any]] = beats
        if extra:
            events.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": item_id,
                    "output_index": m,
                    "content_index": 0,
                    "delta": extra,
                    "logprobs": [],
                }
            )
        events.append(
            {
                "type": "response.output_text.done",
                "item_id": item_id,
                "output_index": m,
                "content_index": 0,
                "text": kept_text,
                "logprobs": [],
            }
        )
        events.append(
            {
                "type": "response.content_part.done",
                "item_id": item_id,
                "output_index": m,
                "content_index": 0,
                "part": message["content"][0],
            }
        )
        events.append({"type": "response.output_item.done", "output_index": m, "item": message})
        for k, item in enumerate(items, start=1):
            added = {**item, "arguments": "", "status": "in_progress"}
            events.append({"type": "response.output_item.added", "output_index": m + k, "item": added})
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": m + k,
                    "delta": item["arguments"],
                }
            )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": m + k,
                    "name": item["name"],
                    "arguments": item["arguments"],
                }
            )
            events.append({"type": "response.output_item.done", "output_index": m + k, "item": item})
        out: list[Any] = []
        for body in events:
            if seq is not None:
                body["sequence_number"] = seq
                seq += 1
            out.append(_unit_like(template, body))
        out += [u for u in held if u.json() is None]  # comments and keep-alives keep going out
        if isinstance(message.get("id"), str):
            self.core.stream_lifts[message["id"]] = [message, *items]
        self._text = None
        self._no_lift = True
        if seq is not None and isinstance(data.get("sequence_number"), int):
            terminal = terminal.with_json({**data, "sequence_number": seq})
        return out + self._dispatch(terminal)

    def _release(self, held: list[Any], *, expand: bool = True) -> list[Any]:
        """The held events of one call, from its ``.added`` to its ``.done`` (the last), resolved
        once from the ``.done`` item; the same units when nothing changes. ``expand``: a
        ``multi_tool_use.parallel`` wrapper may go out as one item per call (more units)."""
        done = held[-1]
        done_data = done.json()
        item = dict(done_data["item"])
        if (
            not isinstance(item.get("name"), str)
            or not isinstance(item.get("type"), str)
            or item.get("type") not in _CALL_TYPES
        ):
            return held
        if expand and item["type"] == "function_call" and item["name"].strip() == PARALLEL_WRAPPER:
            expanded = self._expand_parallel(held, item)
            if expanded is not None:
                return expanded
        decision, new_args, new_id = self.core._decide(item)
        key = _key(item)
        # The held events are this one call's, whatever ids each carries (some servers send the
        # .done with "id": null, or ids only at the end): its items take this decision.
        decided = (decision, new_args, new_id)
        # the item ids this call's .added and .done carry (a server may give each its own)
        own_ids = {
            i["id"]
            for u in held
            if isinstance(data := u.json(), dict)
            and data.get("type") in ("response.output_item.added", "response.output_item.done")
            and isinstance(i := data.get("item"), dict)
            and isinstance(i.get("id"), str)
        }
        own_index = done_data.get("output_index")

        def own(d: Any) -> bool:
            """``d`` is an argument event of this call: by its ``item_id`` when both have one,
            else by its ``output_index`` (a call given up earlier may still send its own)."""
            if not isinstance(d, dict) or d.get("type") not in _ARGUMENT_EVENTS:
                return False
            if own_ids and isinstance(d.get("item_id"), str):
                return d["item_id"] in own_ids
            return d.get("output_index") == own_index

        # Only the call's own argument events count: an unknown event between them may carry a
        # "delta" object of its own (that made a call needing no repair get its
        # argument fragments rewritten).
        objects = not self.core.names_only and (  # names only: nothing but a name changes
            isinstance(item.get("arguments"), (dict, list))
            or any(
                own(d) and isinstance(d.get(k), (dict, list))
                for d in (u.json() for u in held)
                for k in ("arguments", "delta")
            )
        )
        if not decision.changed and new_id is None and not objects:
            return [self._args_done_back(u) for u in held]
        if new_args is not None and any(u.json() is None and b"function_call_arguments" in u.raw for u in held):
            # An argument fragment of the block is not JSON we can read (it passes as it came):
            # rewritten fragments around it would no longer add up. The block goes as it came.
            if decision.changed:
                self.unrepaired.append(
                    f"an argument event of the tool call {item['name']} is not JSON, so its repair could not be written"
                )
            back = self.core.let_go(item, decision)
            if back is not None and self.unrepaired:
                self.unrepaired[-1] += NAMED_BACK + join_namespace(back[1], back[0])
            return [self.core.as_let_go(u) for u in held]
        if new_args is None and objects:
            # Arguments sent as an object (BR-21): every place the client reads them gets a string.
            value = item.get("arguments")
            new_args = value if isinstance(value, str) else jsonio.dumps(value).decode()
        out: list[Any] = []
        first_delta = True
        for unit in held:
            data = unit.json()
            kind = data.get("type") if isinstance(data, dict) else None
            if kind in ("response.output_item.added", "response.output_item.done"):
                new_item = dict(data["item"])
                self.core.apply_item(new_item, with_arguments=kind == "response.output_item.done", decided=decided)
                out.append(unit.with_json({**data, "item": new_item}))
            elif kind == "response.function_call_arguments.delta" and new_args is not None and own(data):
                out.append(unit.with_json({**data, "delta": new_args if first_delta else ""}))
                first_delta = False
            elif (
                kind == "response.function_call_arguments.done"
                and (new_args is not None or "name" in data)
                and own(data)
            ):
                # Some servers (and older SDK types) name the call here too: keep it consistent.
                fixed = {**data}
                if new_args is not None:
                    fixed["arguments"] = new_args
                if "name" in data and decision.changed and decision.target is not None:
                    fixed["name"] = decision.target
                out.append(self._args_done_back(unit.with_json(fixed) if fixed != data else unit))
            else:
                out.append(unit)
        if isinstance(key, str):
            self.core.delivered[key] = self.core.decided.get(key, (decision, new_args, new_id))
        else:
            self.core.keyless.append((item, (decision, new_args, new_id)))
        return out


def _parallel_events(items: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """The events of completed ``function_call`` items sent from ``output_index`` ``index`` on."""
    events: list[dict[str, Any]] = []
    for k, item in enumerate(items):
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index + k,
                "item": {**item, "arguments": "", "status": "in_progress"},
            }
        )
        events.append(
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item["id"],
                "output_index": index + k,
                "delta": item["arguments"],
            }
        )
        events.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": item["id"],
                "output_index": index + k,
                "name": item["name"],
                "arguments": item["arguments"],
            }
        )
        events.append({"type": "response.output_item.done", "output_index": index + k, "item": item})
    return events


#: A function call's argument events (the ones whose ``delta`` / ``arguments`` are the call's).
_ARGUMENT_EVENTS = ("response.function_call_arguments.delta", "response.function_call_arguments.done")

#: Events that belong to a message item's text.
_MESSAGE_EVENTS = (
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.output_item.done",
)


def _first_sequence(units: list[Any]) -> int | None:
    """The first ``sequence_number`` among ``units`` (``None`` when they carry none)."""
    for unit in units:
        d = unit.json()
        if isinstance(d, dict) and isinstance(d.get("sequence_number"), int):
            return d["sequence_number"]
    return None


def _unit_like(template: Any, data: dict[str, Any]) -> Any:
    """A new unit holding ``data``, framed like ``template``: an SSE event gets its ``event:``
    line from ``data["type"]`` (same line ending); a WebSocket frame is the JSON itself."""
    if not isinstance(template, SSEEvent):
        return template.with_json(data)
    raw = template.raw.decode("utf-8", errors="surrogateescape")
    eol = "\r\n" if "\r\n" in raw else ("\r" if "\r" in raw and "\n" not in raw else "\n")
    lines = [f"event: {data['type']}"] if template.event is not None else []
    lines.append("data: " + data_line_json(data))
    return SSEEvent.parse((eol.join(lines) + eol + eol).encode())


DIALECT = OpenAIResponses()
