"""Tool results that report an error, classified so a missed repair shows on the next turn.

When a model calls a tool the client never declared (or calls a declared one with arguments the
client rejects), the client answers the call itself with an error text and sends it back in the
next request. Each real client words it its own way; those texts are recognized **exactly**,
before anything generic, and give two precise kinds:

``unknown_tool`` (the name was not one the client knows)
    - Claude Code 2.1.197 (captured): ``tool_result`` with ``is_error: true`` and content
      ``<tool_use_error>Error: No such tool available: X</tool_use_error>``.
    - Codex CLI 0.171.0 (captured): ``function_call_output.output`` = ``unsupported call: X``;
      ``unsupported custom tool call: X`` for a freeform call (openai/codex
      ``tools/registry.rs`` ``unsupported_tool_call_message``; source only).
    - Qwen Code 0.15.10 (captured): ``Tool "X" not found in registry. Tools must use the exact
      names that are registered. Did you mean one of: …``. Older Gemini CLI builds sent the same
      text (public Gemini CLI logs), so it is attributed to either unless the caller names the
      client. Qwen Code's newer variants (QwenLM/qwen-code ``coreToolScheduler.ts``, source
      only): ``"X" is a skill name, not a tool name. …``; ``Tool "X" not found: no MCP server
      providing it …``; ``Tool "X" is unavailable: the MCP server "S" …``; ``Tool "X" not found
      on MCP server "S". …``.
    - Gemini CLI 0.61.0 (captured): ``functionResponse.response.error`` = ``Tool "X" not found.``
      optionally followed by `` Did you mean one of: …?`` / `` Did you mean "…"?``
      (google-gemini/gemini-cli ``scheduler/scheduler.ts`` and ``utils/tool-utils.ts``).
    - OpenCode 1.18.33 (captured): the call is rewritten in history to tool ``invalid`` with
      arguments ``{"tool": "X", "error": "Model tried to call unavailable tool 'X'. Available
      tools: …"}`` and its result reads ``The arguments provided to the tool are invalid: Model
      tried to call unavailable tool 'X'. Available tools: …`` (the AI SDK's
      ``NoSuchToolError`` text inside OpenCode's ``invalid`` tool).

``invalid_arguments`` (the name was right, the arguments were rejected)
    - Claude Code 2.1.197 (captured): ``<tool_use_error>InputValidationError: Bash failed due to
      the following issue:\\nThe parameter `command` type is expected as `string` but provided
      as `array`</tool_use_error>`` (``issues:`` when there are several).
    - Codex CLI 0.171 (brief; openai/codex source): ``failed to parse function arguments: …``
      (a serde error; the text does not name the tool).
    - OpenCode 1.18.33: ``The read tool was called with invalid arguments: SchemaError(Missing
      key at ["filePath"]) …`` (brief and public OpenCode transcripts; older builds put a zod
      issue list after the colon, then ``Please rewrite the input so it satisfies the expected
      schema.``), possibly behind ``Error: ``; and arguments that were not JSON, routed to the
      ``invalid`` tool: ``The arguments provided to the tool are invalid: Invalid input for tool
      X: JSON parsing failed: …`` (public OpenCode transcripts).
    - Qwen Code and Gemini CLI (source only: both ``SchemaValidator.validate`` →
      ``ajv.errorsText(errors, {dataVar: "params"})``, thrown from ``BaseDeclarativeTool.build``
      and reported as ``INVALID_TOOL_PARAMS``): ``params must have required property 'command'``,
      ``params/command must be string``…, joined by ``, ``; and ``Value of params must be an
      object``. The text does not name the tool and is the same in both clients.

Anything else that is known to be an error (``is_error: true``, a Gemini ``response.error``, a
Claude Code ``<tool_use_error>`` wrapper) falls into the generic categories, first match wins,
case-insensitive: ``timeout`` ("timeout", "timed out"), ``permission`` ("permission", "access
denied", "forbidden"), ``not_found`` ("not found"), ``resource`` ("resource", "memory", "disk"),
``schema`` ("schema", "validation", "json"), ``parse`` ("parse", "decode", "deserializ"),
``execution`` (everything else), ``unknown`` (empty error text).

Pure Python, no mitmproxy. Client names match :func:`toolvocab.engine.clients.identify_client`.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from pydantic import BaseModel
from pydantic import ConfigDict

#: Client names, spelled as :func:`toolvocab.engine.clients.identify_client` returns them.
CLAUDE_CODE = "Claude Code"
CODEX = "Codex"
OPENCODE = "OpenCode"
QWEN_CODE = "Qwen Code"
GEMINI_CLI = "Gemini CLI"

#: How much of the result text a :class:`ToolError` keeps.
TEXT_LIMIT = 300

#: The tool name OpenCode gives a call it could not route (its ``invalid`` sink).
OPENCODE_INVALID_TOOL = "invalid"


class ErrorKind(str, enum.Enum):
    """What a tool result that reports an error is about.

    ``unknown_tool`` and ``invalid_arguments`` come only from a client's exact text (see the
    module docstring); the others are the generic categories.
    """

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    PERMISSION = "permission"
    NOT_FOUND = "not_found"
    TIMEOUT = "timeout"
    RESOURCE = "resource"
    SCHEMA = "schema"
    PARSE = "parse"
    EXECUTION = "execution"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """One tool result from a request's transcript, as a dialect reads it.

    ``call_id`` pairs it with its call (``None`` when the wire has no id, e.g. a Gemini
    ``functionResponse`` without ``id``); ``name`` is the called tool's name as the transcript
    gives it (OpenCode's rewritten calls say ``invalid``); ``text`` is the result's text (text
    blocks joined by newlines); ``is_error`` is the wire's own flag (Anthropic ``is_error``;
    ``True`` for a Gemini ``response.error`` and for OpenCode's ``invalid`` sink), ``None`` when
    the wire carries none.

    A plain frozen dataclass, not a pydantic model: a transcript holds hundreds of results, one
    object each per request, and the dialects give the types. It is never stored.
    """

    call_id: str | None = None
    name: str | None = None
    text: str
    is_error: bool | None = None


class ToolError(BaseModel):
    """A tool result classified as an error.

    ``client`` is the client whose exact text matched (``"Claude Code"``, ``"Codex"``,
    ``"OpenCode"``, ``"Qwen Code"``, ``"Gemini CLI"``; ``"Qwen Code or Gemini CLI"`` for a text
    both send when the caller did not say which), ``None`` for a generic category. ``tool`` is
    the tool name the error text names (``X`` in ``No such tool available: X``), else the
    result's own name (never OpenCode's ``invalid`` sink), else ``None``. ``text`` is the first
    300 characters of the result text.
    """

    model_config = ConfigDict(frozen=True)

    call_id: str | None = None
    name: str | None = None
    kind: ErrorKind
    client: str | None = None
    tool: str | None = None
    text: str


@dataclass(frozen=True)
class _Pattern:
    kind: ErrorKind
    clients: tuple[str, ...]
    regex: re.Pattern[str]


def _p(kind: ErrorKind, clients: tuple[str, ...], pattern: str) -> _Pattern:
    return _Pattern(kind, clients, re.compile(pattern, re.DOTALL))


_U = ErrorKind.UNKNOWN_TOOL
_A = ErrorKind.INVALID_ARGUMENTS
#: Optional ``Error: `` before an OpenCode text (a failed tool's error string).
_OC = r"\A\s*(?:Error:\s*)?"

#: The exact client texts, in the order tried. Each regex matches at the start of the text and
#: names the tool in group ``tool`` when the text carries it.
_PATTERNS: tuple[_Pattern, ...] = (
    # Claude Code 2.1.197 (captured).
    _p(_U, (CLAUDE_CODE,), r"\A\s*<tool_use_error>\s*Error: No such tool available: (?P<tool>[^\s<]+)"),
    _p(
        _A,
        (CLAUDE_CODE,),
        r"\A\s*<tool_use_error>\s*InputValidationError: (?:(?P<tool>\S+) failed due to the following issues?:)?",
    ),
    # Codex CLI 0.171.0 (captured: ``unsupported call``; the custom-tool variant from source).
    _p(_U, (CODEX,), r"\A\s*unsupported (?:custom tool )?call: (?P<tool>\S+)"),
    _p(_A, (CODEX,), r"\A\s*failed to parse function arguments: "),
    # OpenCode 1.18.33: its ``invalid`` sink (captured), the AI SDK input error inside it, the
    # schema check of each tool.
    _p(
        _U,
        (OPENCODE,),
        _OC + r"The arguments provided to the tool are invalid: Model tried to call unavailable tool '(?P<tool>[^']*)'",
    ),
    _p(
        _A,
        (OPENCODE,),
        _OC + r"The arguments provided to the tool are invalid: Invalid input for tool (?P<tool>\S+?): ",
    ),
    _p(_A, (OPENCODE,), _OC + r"The arguments provided to the tool are invalid: "),
    _p(_A, (OPENCODE,), _OC + r"The (?P<tool>\S+) tool was called with invalid arguments: "),
    # The AI SDK's text on its own (OpenCode's ``invalid`` call arguments carry it as ``error``).
    _p(
        _U,
        (OPENCODE,),
        r"\A\s*Model tried to call unavailable tool '(?P<tool>[^']*)'\. (?:Available tools: |No tools are available\.)",
    ),
    # Qwen Code 0.15.10 (captured); older Gemini CLI builds sent the same text.
    _p(
        _U,
        (QWEN_CODE, GEMINI_CLI),
        r'\A\s*Tool "(?P<tool>[^"]*)" not found in registry\. Tools must use the exact names that are registered\.',
    ),
    # Qwen Code, newer variants (source only).
    _p(_U, (QWEN_CODE,), r'\A\s*"(?P<tool>[^"]*)" is a skill name, not a tool name\.'),
    _p(_U, (QWEN_CODE,), r'\A\s*Tool "(?P<tool>[^"]*)" not found: no MCP server providing it'),
    _p(_U, (QWEN_CODE,), r'\A\s*Tool "(?P<tool>[^"]*)" is unavailable: the MCP server "'),
    _p(_U, (QWEN_CODE,), r'\A\s*Tool "(?P<tool>[^"]*)" not found on MCP server "'),
    # Gemini CLI 0.61.0 (captured).
    _p(_U, (GEMINI_CLI,), r'\A\s*Tool "(?P<tool>[^"]*)" not found\.(?:\s|\Z)'),
    # Qwen Code / Gemini CLI parameter validation (ajv ``errorsText`` with ``dataVar: "params"``;
    # source only).
    _p(_A, (QWEN_CODE, GEMINI_CLI), r"\A\s*(?:Value of params must be an object|params(?:/\S*)? must )"),
)

#: How every text in :data:`_PATTERNS` or :data:`_CLAUDE_WRAPPER` begins: a text that begins
#: otherwise matches none of them (one match instead of one per pattern: a transcript holds
#: hundreds of results, most of them not errors).
_CANDIDATE = re.compile(
    r'\A\s*(?:<tool_use_error>|unsupported |failed to parse |Error:|The |Model tried |Tool "|"|Value of params |params)'
)

#: Claude Code wraps every error it reports to the model in this tag.
_CLAUDE_WRAPPER = re.compile(r"\A\s*<tool_use_error>(?P<inner>.*?)(?:</tool_use_error>\s*)?\Z", re.DOTALL)

#: The generic categories, first match wins (lower-cased substring match).
_GENERIC: tuple[tuple[ErrorKind, tuple[str, ...]], ...] = (
    (ErrorKind.TIMEOUT, ("timeout", "timed out")),
    (ErrorKind.PERMISSION, ("permission", "access denied", "forbidden")),
    (ErrorKind.NOT_FOUND, ("not found",)),
    (ErrorKind.RESOURCE, ("resource", "memory", "disk")),
    (ErrorKind.SCHEMA, ("schema", "validation", "json")),
    (ErrorKind.PARSE, ("parse", "decode", "deserializ")),
)


def generic_kind(text: str) -> ErrorKind:
    """The generic category of an error text: the first of ``timeout``, ``permission``,
    ``not_found``, ``resource``, ``schema``, ``parse`` whose words it contains (any case), else
    ``execution``; ``unknown`` when the text is empty or blank."""
    lowered = text.strip().lower()
    if not lowered:
        return ErrorKind.UNKNOWN
    for kind, words in _GENERIC:
        if any(word in lowered for word in words):
            return kind
    return ErrorKind.EXECUTION


def _client_of(clients: tuple[str, ...], hint: str | None) -> str:
    if hint is not None and hint in clients:
        return hint
    return " or ".join(clients)


def _fallback_tool(result: ToolResult) -> str | None:
    if result.name and result.name != OPENCODE_INVALID_TOOL:
        return result.name
    return None


def classify_tool_result(result: ToolResult, client: str | None = None) -> ToolError | None:
    """The error ``result`` reports, or ``None`` when it reports none.

    - ``is_error`` is ``False``: ``None``, whatever the text says.
    - A client's exact unknown-tool or invalid-arguments text (module docstring): that kind,
      with the client and the tool the text names. This decides for the wires that carry no
      error flag (Codex ``function_call_output``, Chat ``tool`` messages from Qwen Code and
      OpenCode) and is tried first when the flag is set.
    - Otherwise, when ``is_error`` is ``True`` or the text is wrapped in Claude Code's
      ``<tool_use_error>``: the generic category of the text (``unknown`` when empty).
    - Otherwise (flag unknown, no error text): ``None``.

    ``client`` is the sending client when the caller knows it (:func:`identify_client`); it only
    picks the attribution of a text two clients share (Qwen Code and Gemini CLI).
    """
    if result.is_error is False:
        return None
    text = result.text
    if result.is_error is None and _CANDIDATE.match(text) is None:
        return None
    for pattern in _PATTERNS:
        m = pattern.regex.match(text)
        if m is None:
            continue
        named = m.groupdict().get("tool")
        if named is not None:
            named = named.rstrip(".") or None
        return ToolError(
            call_id=result.call_id,
            name=result.name,
            kind=pattern.kind,
            client=_client_of(pattern.clients, client),
            tool=named if named is not None else _fallback_tool(result),
            text=text[:TEXT_LIMIT],
        )
    wrapper = _CLAUDE_WRAPPER.match(text)
    wrapped = wrapper is not None
    if result.is_error is not True and not wrapped:
        return None
    return ToolError(
        call_id=result.call_id,
        name=result.name,
        kind=generic_kind(wrapper.group("inner") if wrapper is not None else text),
        client=CLAUDE_CODE if wrapped else None,
        tool=_fallback_tool(result),
        text=text[:TEXT_LIMIT],
    )


def classify_tool_results(results: list[ToolResult], client: str | None = None) -> list[ToolError]:
    """:func:`classify_tool_result` over ``results``, keeping only the errors, in order."""
    out: list[ToolError] = []
    for result in results:
        error = classify_tool_result(result, client)
        if error is not None:
            out.append(error)
    return out
