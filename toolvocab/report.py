"""What toolvocab's records say, as text: pure functions over record dicts and flows, no running
mitmproxy needed. The addon's log lines and its UI (:mod:`toolvocab.addons.ui`: the contentview,
``toolvocab.explain`` / ``toolvocab.stats`` / ``toolvocab.tools``) and the command line
(:mod:`toolvocab.cli`, over saved flow files) all print from here.

* :func:`log_line` / :func:`left_line`: the one-line log of a flow (mitmdump's event log).
* :func:`render_record`, :func:`render_message`, :func:`view_priority`: the contentview's text
  of the record in ``flow.metadata["toolvocab"]`` (a dumped :class:`toolvocab.engine.record.FlowRecord`):
  every tool call before/after with the decision, its ladder step, the reason and the candidates
  considered; the request side's renames and the prompt sentence; tool errors; notes; provider
  metadata; then the message body, pretty-printed.
* :func:`explain_flows`: why each name was or was not repaired; :func:`stats` / :func:`stats_text`:
  counts of decisions, ladder steps, clients, hosts, dialects, models and tool errors, with call
  totals and median latencies.
* :func:`tools_text`: the tools each flow's client declared, normalized or in one API's shape.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from toolvocab.dialects import detect
from toolvocab.engine.export import normalize_tools
from toolvocab.engine.export import render_tools
from toolvocab.engine.ladder import Toolset

METADATA_KEY = "toolvocab"
METADATA_REQUEST = "toolvocab_request"
METADATA_UPSTREAM = "toolvocab_upstream"
METADATA_DIFF = "toolvocab_diff"
#: The headers toolvocab changed on a flow, as they were: ``{"request": {name: value or None},
#: "response": {…}}`` (``None``: absent); ``accept-encoding`` (the answer must be readable as it
#: streams), ``content-length`` and ``transfer-encoding`` (an answer rewritten as it streams).
#: A replay puts them back before it runs the addon again.
METADATA_HEADERS = "toolvocab_headers"
VIEW_NAME = "toolvocab"
#: The first note of a replayed flow's record (mitmproxy's ``replay.client``, mitmweb's Replay).
REPLAY_NOTE = (
    "a replay (mitmproxy's replay.client): the request replayed is the one this flow held — what the upstream "
    "received the first time, toolvocab's changes included, or your edit of it — not the client's original; "
    "this record describes the replay"
)
#: Above the built-in JSON view (1 in 11 and 12); the highest wins in "auto".
VIEW_PRIORITY = 2.0
RULE = "─" * 72
#: Text is wrapped to fit mitmweb's detail pane (about 90 columns in a 1400 px window).
WIDTH = 88

_ACTION_WORDS = {
    "keep": ("kept", "would keep"),
    "fit": ("arguments fitted", "would fit arguments"),
    "rename": ("renamed", "would rename"),
    "leave": ("left unchanged", "left unchanged"),
}
_STEP_WORDS = {
    "declared": "the name is declared",
    "reverse_map": "mapped back from the name sent upstream",
    "normalized": "same name once case, separators or a namespace prefix are ignored",
    "capability": "the one declared tool with the same capability",
    "none": "no ladder step found exactly one declared tool",
}


# -- helpers ------------------------------------------------------------------------------------


def record_of(item: Any) -> dict | None:
    """The toolvocab record of a flow (its ``metadata["toolvocab"]``) or of a record dict."""
    if isinstance(item, dict):
        return item
    metadata = getattr(item, "metadata", None)
    if isinstance(metadata, dict):
        record = metadata.get(METADATA_KEY)
        return record if isinstance(record, dict) else None
    return None


def is_handled(record: dict | None) -> bool:
    """True when toolvocab looked at the flow's tools (not a skip record)."""
    return bool(record) and not record.get("skipped") and (bool(record.get("dialect")) or bool(record.get("decisions")))


def change_kind(record: dict | None) -> str | None:
    """What toolvocab changed in a flow: ``"tools"`` (a tool call in the answer, or a tool name
    sent upstream: renamed, aliased, dropped duplicate, fitted arguments, new ids), ``"prompt"``
    (only the one prompt sentence was added to the request) or ``None`` (nothing changed).
    The flow's visible state is :func:`outcome`.
    """
    if not record:
        return None
    request, response = bool(record.get("request_changed")), bool(record.get("response_changed"))
    if response:
        return "tools"
    if not request:
        return None
    names_changed = bool(
        record.get("rename_map") or record.get("duplicates") or record.get("renames") or record.get("id_aliases")
    )
    if record.get("prompt_sentence") and not names_changed:
        return "prompt"
    return "tools"


# -- the three states a user sees -----------------------------------------------------------------

#: A flow's visible state (:func:`outcome`), each with its marker (mitmproxy's emoji shortcode, as
#: ``flow.marked`` stores it; ``~marker <shortcode>`` finds them), the first words of its comment
#: and its log level. In order of precedence: a flow counts in the first that applies.
PASSED = "passed through"
LEFT = "left"
OBSERVED = "would change"
CHANGED = "changed"
PROMPT = "prompt sentence only"
STATES = (PASSED, LEFT, OBSERVED, CHANGED, PROMPT)
#: A handled flow in none of them (``stats`` counts it too), and the order ``stats`` prints them in.
UNCHANGED = "unchanged"
STATE_ORDER = (CHANGED, LEFT, PASSED, PROMPT, OBSERVED, UNCHANGED)
MARKERS = {PASSED: ":warning:", LEFT: ":no_entry:", OBSERVED: ":eyes:", CHANGED: ":wrench:", PROMPT: ""}
#: How every note of a give-up begins: toolvocab could not repair (part of) the answer or the
#: request and let it through as it came (:func:`passed_note`).
PASSED_PREFIX = "passed through: "


def passed_note(why: str, got: str) -> str:
    """The record note of a give-up: ``passed through: <why>; the client got <got>`` (``got``
    says what reached the client, or the upstream for a request)."""
    return f"{PASSED_PREFIX}{why}; {got}"


def passed_reasons(record: dict | None) -> list[str]:
    """The give-ups of a flow (its notes that start with :data:`PASSED_PREFIX`), prefix removed."""
    return [
        n[len(PASSED_PREFIX) :]
        for n in (record or {}).get("notes") or []
        if isinstance(n, str) and n.startswith(PASSED_PREFIX)
    ]


def left_decisions(record: dict | None) -> list[dict]:
    """The decisions that left a call as the model answered it (a name no declared tool fits:
    the client will reject the call)."""
    return [d for d in (record or {}).get("decisions") or [] if d.get("action") == "leave"]


def would_change(record: dict) -> bool:
    """In ``observe`` mode: whether the flow would have changed (a decision, a rename, the sentence)."""
    return bool(record.get("prompt_sentence") or record.get("renames")) or any(
        d.get("action") in ("rename", "fit") for d in record.get("decisions") or []
    )


def outcome(record: dict | None) -> str | None:
    """The state a flow shows: :data:`PASSED` (toolvocab gave up on part of it: a stall, a repeated
    key, events out of order, an empty DATA frame ending the rewrite, an internal error — the
    client got that part as it came), :data:`LEFT` (a call no declared tool fits went to the client
    as answered: the client will reject it), :data:`OBSERVED` (observe mode, something would
    change), :data:`CHANGED` (a tool call or a tool name changed), :data:`PROMPT` (only the prompt
    sentence was added), or ``None`` (nothing to see). The first that applies wins: a flow both
    sentence-added (or changed) and left is left."""
    if not record:
        return None
    if passed_reasons(record):
        return PASSED
    if not is_handled(record):
        return None
    if left_decisions(record):
        return LEFT
    if record.get("mode") == "observe":
        return OBSERVED if would_change(record) else None
    return {"tools": CHANGED, "prompt": PROMPT}.get(change_kind(record) or "")


#: How a decision's reason says the request's tool choice kept its one target from it
#: (:meth:`toolvocab.addons.state.FlowState.resolve`): ``…; but the request's tool choice does not allow Bash``.
TOOL_CHOICE_LEFT = "; but the request's tool choice does not allow "


def left_reason(d: dict) -> str:
    """Why a call was left, in a few words: ``not declared``, ``2 candidates: Bash, PowerShell``,
    ``does not fit Bash``, ``the tool choice does not allow Bash``."""
    reason = d.get("reason") or ""
    if TOOL_CHOICE_LEFT in reason:
        return "the tool choice does not allow " + reason.rsplit(TOOL_CHOICE_LEFT, 1)[1]
    candidates = d.get("candidates") or []
    if len(candidates) > 1:
        return f"{len(candidates)} candidates: {', '.join(candidates)}"
    if candidates:
        return f"not declared; does not fit {candidates[0]}"
    return "not declared"


def _changes(record: dict) -> list[str]:
    """The changes of a flow, one short item each (``shell→Bash (capability)``; a call lifted out
    of the answer's text says so: ``read_file lifted from text``)."""
    parts = []
    for d in record.get("decisions") or []:
        lifted = " lifted from text" if d.get("lifted") else ""
        if d.get("action") == "rename":
            parts.append(
                f"{_qualified(d.get('namespace'), d.get('name'))}→"
                f"{_qualified(d.get('target_namespace'), d.get('target'))} ({d.get('step')}){lifted}"
            )
        elif d.get("action") == "fit":
            parts.append(f"{_qualified(d.get('namespace'), d.get('name'))}: arguments fitted{lifted and ','}{lifted}")
        elif lifted:
            parts.append(f"{_qualified(d.get('namespace'), d.get('name'))}{lifted}")
    return parts


def _where(record: dict) -> str:
    return f"{record.get('client') or 'unknown client'} → {record.get('host') or '?'}"


def log_line(record: dict) -> str:
    """The one line mitmdump prints for a changed flow, e.g.
    ``toolvocab: shell→Bash (capability) · Claude Code → api.anthropic.com``; in ``observe`` mode
    what would have changed, ``toolvocab: would change (observe): shell→Bash (capability) · …``
    (the words of the flow's :func:`comment`). Repairs only: calls left alone have their own line
    (:func:`left_line`), give-ups theirs (:func:`passed_line`); :func:`log_kind` gives its level."""
    observe = record.get("mode") == "observe"
    sent = record.get("request_changed") or observe  # observe changes nothing: what it would send
    parts = _changes(record)
    renamed = record.get("rename_map") or {}
    if renamed and sent:
        parts.append(f"{_plural(len(renamed), 'tool')} renamed upstream")
    if record.get("prompt_sentence") and sent:
        parts.append(f"prompt sentence names {_plural(len(record.get('prompt_names') or []), 'tool')}")
    if not parts and record.get("response_changed"):
        parts.append("answer rewritten (ids or argument encoding)")
    prefix = "toolvocab: would change (observe): " if observe else "toolvocab: "
    return prefix + ("; ".join(parts) or "no change") + " · " + _where(record)


def log_kind(record: dict) -> str | None:
    """Whether the flow has a :func:`log_line`, and of what kind: :func:`change_kind` (``"tools"``,
    ``"prompt"``), in ``observe`` mode what would have changed (``"prompt"`` when only the
    sentence would have been added); ``None``: no line."""
    if record.get("mode") != "observe":
        return change_kind(record)
    if _changes(record) or record.get("rename_map"):
        return "tools"
    return "prompt" if record.get("prompt_sentence") else None


def left_line(record: dict) -> str | None:
    """The ``info`` line for calls left as answered (``toolvocab: frobnicate left (not declared) ·
    Claude Code → api.anthropic.com``), or None when no call was left."""
    left = left_decisions(record)
    if not left:
        return None
    parts = [f"{_qualified(d.get('namespace'), d.get('name'))} left ({left_reason(d)})" for d in left]
    return "toolvocab: " + "; ".join(parts) + " · " + _where(record)


def passed_line(record: dict) -> str | None:
    """The ``warn`` line for a flow toolvocab gave up on: why, and what the client got; None when
    it gave up on nothing."""
    reasons = passed_reasons(record)
    if not reasons:
        return None
    return "toolvocab: passed through (could not repair): " + " | ".join(reasons) + " · " + _where(record)


def comment(record: dict | None) -> str:
    """The flow's one-line comment for mitmproxy's UI; its first words are its state
    (:func:`outcome`): ``changed: shell→Bash (capability)``, ``left: frobnicate (not declared) —
    the client will reject this call``, ``passed through: <why>; the client got <what>``,
    ``prompt sentence only: names 2 tools``, ``would change (observe): …``; ``""`` for none."""
    state = outcome(record)
    if state is None or record is None:
        return ""
    tools = _changes(record)
    renamed = record.get("rename_map") or {}
    if renamed and (record.get("request_changed") or record.get("mode") == "observe"):
        tools.append(f"{_plural(len(renamed), 'tool')} renamed upstream")
    aliased = record.get("id_aliases") or {}
    if aliased and record.get("request_changed"):
        tools.append(f"{_plural(len(aliased), 'replayed id')} aliased upstream")
    sent = record.get("request_changed") or record.get("mode") == "observe"  # a sentence not sent is no change
    sentence = (
        f"prompt names {_plural(len(record.get('prompt_names') or []), 'tool')}"
        if record.get("prompt_sentence") and sent
        else None
    )
    changes = tools + ([sentence] if sentence else [])
    left = left_decisions(record)
    left_text = ", ".join(f"{_qualified(d.get('namespace'), d.get('name'))} ({left_reason(d)})" for d in left)
    left_text += " — the client will reject " + ("this call" if len(left) == 1 else "these calls")
    verb = "would change" if record.get("mode") == "observe" else "changed"
    # what else the flow did, after its state: tool changes, then the sentence
    extra = ([f"{verb}: {'; '.join(tools)}"] if tools else []) + (
        [f"prompt sentence {'would be ' if verb == 'would change' else ''}added ({sentence.removeprefix('prompt ')})"]
        if sentence
        else []
    )
    if state == PASSED:
        extra = ([f"left: {left_text}"] if left else []) + extra
        return PASSED_PREFIX + " | ".join(passed_reasons(record)) + "".join(f" · {e}" for e in extra)
    if state == LEFT:
        return f"left: {left_text}" + "".join(f" · {e}" for e in extra)
    if state == OBSERVED:
        return "would change (observe): " + "; ".join(changes)
    if state == PROMPT:
        return f"prompt sentence only: names {_plural(len(record.get('prompt_names') or []), 'tool')}"
    return "changed: " + ("; ".join(changes) or "answer rewritten (ids or argument encoding)")


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _qualified(namespace: str | None, name: str | None) -> str:
    return f"{namespace or ''}{name or '?'}"


def _call_text(namespace: str | None, name: str | None, arguments: Any) -> str:
    label = _qualified(namespace, name)
    if arguments is None:
        return f"{label} (arguments not a JSON object)"
    return f"{label} {_json(arguments)}"


def _observe(record: dict) -> bool:
    return record.get("mode") == "observe"


def _ms(value: Any) -> str:
    return "–" if value is None else f"{float(value):g} ms"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _arg_change_text(change: dict) -> str:
    op, key, to = change.get("op", "?"), change.get("key", "?"), change.get("to")
    target = f" → {to}" if to and to != key else ""
    if op == "rename_key":
        return f"{op} {key}{target}"
    before, after = change.get("before"), change.get("after")
    if before is None and after is None:
        return f"{op} {key}{target}"
    return f"{op} {key}{target}: {_json(before)} → {_json(after)}"


def _wrap(text: str, indent: str, first: str = "") -> list[str]:
    """``first + text`` wrapped at :data:`WIDTH`, later lines indented by ``indent`` + 2."""
    return textwrap.wrap(
        first + text,
        WIDTH,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent + first.rstrip()]


def _decision_lines(d: dict, *, observe: bool, indent: str = "") -> list[str]:
    """``- before`` / ``+ after`` (or ``= call``) and the why of one decision."""
    action, step = d.get("action", "?"), d.get("step", "?")
    changed = action in ("rename", "fit")
    before = _call_text(d.get("namespace"), d.get("name"), d.get("arguments_before"))
    lines = []
    if changed:
        after_args = d.get("arguments_after") if d.get("arguments_after") is not None else d.get("arguments_before")
        target = d.get("target") or d.get("name")
        namespace = d.get("target_namespace") if d.get("target") else d.get("namespace")
        lines += [f"{indent}- {before}", f"{indent}+ {_call_text(namespace, target, after_args)}"]
    else:
        lines.append(f"{indent}= {before}")
    word = _ACTION_WORDS.get(action, (action, action))[1 if observe else 0]
    sub = indent + "    "
    lines.append(f"{sub}{action} at {step} ({word})")
    lines += _wrap(d.get("reason") or "no reason recorded", sub, "reason: ")
    candidates = d.get("candidates") or []
    if candidates:
        extra = " (more than one: declined to guess)" if action == "leave" and len(candidates) > 1 else ""
        lines += _wrap(f"{', '.join(candidates)}{extra}", sub, "candidates: ")
    for change in d.get("arg_changes") or []:
        lines.append(f"{sub}argument: {_arg_change_text(change)}")
    if d.get("call_id"):
        lines.append(f"{sub}call id: {d['call_id']}")
    return lines


def _provider_lines(record: dict) -> list[str]:
    status = record.get("status") if record.get("status") is not None else "–"
    where = f"{record.get('host') or '–'}{record.get('path') or ''}"
    return [
        f"upstream: {where} · model {record.get('model') or '–'} · status {status}",
        f"client: {record.get('client') or '–'} · ttfb {_ms(record.get('ttfb_ms'))} · total {_ms(record.get('total_ms'))}"
        + (" · streamed" if record.get("streamed") else ""),
    ]


def _request_lines(record: dict, *, observe: bool, indent: str = "  ") -> list[str]:
    lines: list[str] = []
    declared = record.get("declared") or []
    lines += _wrap(", ".join(declared) if declared else "–", indent, f"declared ({len(declared)}): ")
    if record.get("profile"):
        lines.append(f"{indent}profile: {record['profile']}")
    if record.get("grammar"):
        lines.append(f"{indent}name grammar: {record['grammar']}")
    for r in record.get("renames") or []:
        upstream = r.get("upstream") if r.get("upstream") is not None else "(dropped)"
        lines += _wrap(
            f"{r.get('caller')} → {upstream} ({r.get('why')}: {r.get('detail')})", indent, "renamed upstream: "
        )
    for caller, upstream in (record.get("rename_map") or {}).items():
        if not any(r.get("caller") == caller for r in record.get("renames") or []):
            lines.append(f"{indent}renamed upstream: {caller} → {upstream}")
    for name, later in (record.get("duplicates") or {}).items():
        shown = ", ".join("(dropped)" if u is None else "(as declared)" if u == name else u for u in later)
        lines.append(f"{indent}declared more than once: {name} → later declarations {shown}")
    sentence = record.get("prompt_sentence")
    if sentence:
        verb = (
            "added to the system prompt"
            if record.get("request_changed")
            else ("would add to the system prompt" if observe else "system prompt sentence (not sent)")
        )
        lines.append(f"{indent}{verb}:")
        lines += _wrap(sentence, indent + "  ")
        if record.get("prompt_names"):
            lines += _wrap(", ".join(record["prompt_names"]), indent, "names it lists: ")
    else:
        lines.append(f"{indent}system prompt: unchanged")
    return lines


def _tool_error_lines(record: dict) -> list[str]:
    """One line per tool error in the request's transcript (``tool_errors``, when recorded)."""
    lines = []
    for e in record.get("tool_errors") or []:
        tool = f" (tool {e['tool']})" if e.get("tool") and e.get("tool") != e.get("name") else ""
        call = f" [{e['call_id']}]" if e.get("call_id") else ""
        wording = f" ({e['client']}'s wording)" if e.get("client") else ""
        text = " ".join(str(e.get("text") or "").split())
        lines.append(f"{e.get('kind') or 'error'}: {e.get('name') or '?'}{tool}{call}{wording} — {text}".rstrip(" —"))
    return lines


# -- the record, rendered -----------------------------------------------------------------------


def render_record(
    record: dict | None,
    *,
    side: str | None = None,
    diff: str | None = None,
    original_size: int | None = None,
    replay: bool = False,
) -> str:
    """The toolvocab record as text, as the contentview shows it above the body.

    ``side`` (``"request"``/``"response"``) says which message the body below belongs to; that
    side's section comes first. ``diff`` is ``metadata["toolvocab_diff"]``, shown only when the
    record has no decisions to rebuild it from; ``original_size`` is the size of the original
    bytes kept in metadata for this side (the client's request, the upstream's answer);
    ``replay``: the flow is a replay (mitmproxy's ``replay.client``), whose request is the one the
    flow held, not a client's.
    """
    if not record:
        return "toolvocab: this flow has no toolvocab record"
    observe = _observe(record)
    if record.get("skipped"):
        head = f"toolvocab: not handled — {record['skipped']}"
        if record.get("dialect"):
            head += f" (dialect {record['dialect']})"
        return "\n".join(
            [head, f"mode: {record.get('mode') or '–'}", *(f"note: {n}" for n in record.get("notes") or [])]
        )
    changed = [s for s in ("request", "response") if record.get(f"{s}_changed")]
    lines = [
        f"toolvocab — {record.get('dialect') or '?'} · mode {record.get('mode') or '?'} · "
        + (f"changed: {' + '.join(changed)}" if changed else "changed: nothing"),
    ]
    if replay and REPLAY_NOTE in (record.get("notes") or []):
        lines += _wrap(REPLAY_NOTE.removeprefix("a replay "), "", "replay ")
    if outcome(record):
        lines += _wrap(comment(record), "", "state: ")
    if observe:
        lines.append("observe mode: nothing was changed; below is what would change")
    lines += _provider_lines(record)
    lines.append(
        f"calls: {record.get('calls_seen', 0)} seen, {record.get('calls_kept', 0)} kept, "
        f"{record.get('calls_repaired', 0)} repaired, {record.get('calls_left', 0)} left"
    )
    calls = ["", "Tool calls in the answer (- before, + after, = unchanged):"]
    decisions = record.get("decisions") or []
    if decisions:
        for d in decisions:
            calls += _decision_lines(d, observe=observe, indent="  ")
    elif diff:
        calls += ["  " + line for line in diff.splitlines()]
    else:
        calls.append("  (none)")
    request = ["", "Request side:", *_request_lines(record, observe=observe)]
    lines += request + calls if side == "request" else calls + request
    errors = _tool_error_lines(record)
    if errors:
        lines += ["", "Tool errors in the request's transcript:"]
        for error in errors:
            lines += _wrap(error, "  ")
    notes = [n for n in record.get("notes") or [] if not (replay and n == REPLAY_NOTE)]  # shown at the top
    if notes:
        lines += ["", "Notes:"]
        for note in notes:
            lines += _wrap(note, "  ", "- ")
    if side == "request" and replay:
        below = ["Body below: the request as sent upstream at the replay."]
        if original_size is not None:
            below.append(
                f"The replayed request before toolvocab changed it ({original_size} bytes) is in metadata {METADATA_REQUEST}."
            )
    elif side == "request":
        below = ["Body below: the request as sent upstream."]
        if original_size is not None:
            below.append(f"The client's original ({original_size} bytes) is in metadata {METADATA_REQUEST}.")
    elif side == "response" and replay:
        below = ["Body below: the answer after toolvocab, at the replay (mitmproxy received it, no client did)."]
        if original_size is not None:
            below.append(f"The upstream's original ({original_size} bytes) is in metadata {METADATA_UPSTREAM}.")
    elif side == "response":
        below = ["Body below: the answer as the client received it."]
        if original_size is not None:
            below.append(f"The upstream's original ({original_size} bytes) is in metadata {METADATA_UPSTREAM}.")
    else:
        below = []
    if below:
        lines += ["", RULE, *below, RULE]
    return "\n".join(lines)


def render_body(data: bytes) -> str:
    """The message body: JSON pretty-printed, anything else as UTF-8 text."""
    if not data:
        return "(no content)"
    try:
        return orjson.dumps(orjson.loads(data), option=orjson.OPT_INDENT_2).decode()
    except (orjson.JSONDecodeError, TypeError):
        return data.decode("utf-8", "replace")


def render_message(data: bytes, flow: Any, http_message: Any) -> str:
    """The contentview's text for one message of ``flow``: the record, then the body."""
    metadata = getattr(flow, "metadata", None) or {}
    record = record_of(flow)
    side = None
    original: Any = None
    if http_message is not None and http_message is getattr(flow, "request", None):
        side, original = "request", metadata.get(METADATA_REQUEST)
    elif http_message is not None and http_message is getattr(flow, "response", None):
        side, original = "response", metadata.get(METADATA_UPSTREAM)
    head = render_record(
        record,
        side=side,
        diff=metadata.get(METADATA_DIFF),
        original_size=len(original) if isinstance(original, (bytes, str)) else None,
        replay=getattr(flow, "is_replay", None) == "request",
    )
    return f"{head}\n{render_body(data)}"


def view_priority(flow: Any, http_message: Any) -> float:
    """:data:`VIEW_PRIORITY` for an HTTP message of a flow toolvocab handled, else 0."""
    if flow is None or http_message is None:
        return 0.0
    if http_message is not getattr(flow, "request", None) and http_message is not getattr(flow, "response", None):
        return 0.0
    return VIEW_PRIORITY if is_handled(record_of(flow)) else 0.0


# -- explain --------------------------------------------------------------------------------------


def _label(item: Any, record: dict, index: int) -> str:
    request = getattr(item, "request", None)
    if request is not None:
        where = f"{request.method} {request.pretty_url}"
        ident = f"flow {str(getattr(item, 'id', ''))[:8]}"
    else:
        where = f"{record['host']}{record.get('path') or ''}" if record.get("host") else "(host not recorded)"
        ident = f"flow {index}"
    bits = [
        record.get("dialect"),
        f"model {record.get('model')}" if record.get("model") else None,
        f"client {record.get('client')}" if record.get("client") else None,
        f"mode {record.get('mode') or '?'}",
    ]
    return f"{ident}: {where} ({', '.join(b for b in bits if b)})"


def explain_record(record: dict) -> list[str]:
    """Why each name in one record was or was not repaired, one item a line (no header)."""
    if record.get("skipped"):
        return [f"not handled: {record['skipped']}"] + [f"note: {n}" for n in record.get("notes") or []]
    observe = _observe(record)
    lines: list[str] = []
    if outcome(record):
        lines.append(f"state: {comment(record)}")
    decisions = record.get("decisions") or []
    if not decisions:
        lines.append(
            "no tool call resolved before toolvocab gave up (see the notes)"
            if passed_reasons(record)
            else "no tool calls in the answer"
        )
    for d in decisions:
        action, step = d.get("action", "?"), d.get("step", "?")
        name = _qualified(d.get("namespace"), d.get("name"))
        target = _qualified(d.get("target_namespace"), d.get("target")) if d.get("target") else None
        candidates = d.get("candidates") or []
        cand = f"candidates: {', '.join(candidates)}" if candidates else "no candidates"
        step_word = _STEP_WORDS.get(step, step)
        if action == "rename":
            verb = "would be renamed" if observe else "renamed"
            head = f"{name} → {target}: {verb} at step {step} ({step_word})"
        elif action == "fit":
            verb = "would get its arguments fitted" if observe else "arguments fitted"
            head = f"{name}: {verb} at step {step} ({step_word})"
        elif action == "keep":
            head = f"{name}: kept at step {step} ({step_word})"
        elif action == "leave":
            why = "several candidates, declined to guess" if len(candidates) > 1 else "no declared tool fits"
            head = f"{name}: NOT repaired, left as answered at step {step} ({why})"
        else:
            head = f"{name}: {action} at step {step}"
        lines.append(head)
        lines.append(f"    reason: {d.get('reason') or 'no reason recorded'}")
        lines.append(f"    {cand}")
        for change in d.get("arg_changes") or []:
            lines.append(f"    argument: {_arg_change_text(change)}")
    for r in record.get("renames") or []:
        upstream = r.get("upstream") if r.get("upstream") is not None else "(dropped)"
        lines.append(f"request: {r.get('caller')} sent upstream as {upstream} ({r.get('why')}: {r.get('detail')})")
    if record.get("prompt_sentence"):
        verb = "added" if record.get("request_changed") else ("would add" if observe else "not sent")
        lines.append(f"request: prompt sentence {verb}: {record['prompt_sentence']}")
    for e in _tool_error_lines(record):
        lines.append(f"tool error: {e}")
    for note in record.get("notes") or []:
        lines.append(f"note: {note}")
    return lines


def explain_flows(records: Iterable[Any]) -> str:
    """Why each tool name in each flow was or was not repaired: the action, the ladder step, the
    reason and the candidates, plus request-side renames, the prompt sentence, tool errors and
    notes. ``records`` holds record dicts or flows (flows without a record are counted)."""
    out: list[str] = []
    without = 0
    for index, item in enumerate(records, 1):
        record = record_of(item)
        if not record:
            without += 1
            continue
        out.append(_label(item, record, index))
        out += ["  " + line for line in explain_record(record)]
    if without:
        out.append(f"{_plural(without, 'flow')} without a toolvocab record")
    if not out:
        return "toolvocab: no flows"
    return "\n".join(out)


# -- stats ----------------------------------------------------------------------------------------


def stats(records: Iterable[Any]) -> dict[str, Any]:
    """Counts over the records (dicts or flows) as plain data; :func:`stats_text` prints it."""
    recs = [r for r in (record_of(i) for i in records) if r]
    handled = [r for r in recs if is_handled(r)]
    out: dict[str, Any] = {
        "flows": len(recs),
        "handled": len(handled),
        "skipped": len(recs) - len(handled),
        "changed": sum(bool(r.get("request_changed") or r.get("response_changed")) for r in handled),
        "observe": sum(r.get("mode") == "observe" for r in handled),
        # each flow once, in the first state that applies (outcome); a give-up may come with a skip
        "state": _count_states(recs),
        "calls": {k: sum(int(r.get(f"calls_{k}") or 0) for r in handled) for k in ("seen", "kept", "repaired", "left")},
        # observe mode changes nothing: its repairs are ones that would have been made
        "would_repair": sum(int(r.get("calls_repaired") or 0) for r in handled if r.get("mode") == "observe"),
        "action": Counter(),
        "step": Counter(),
        "client": Counter(),
        "host": Counter(),
        "dialect": Counter(),
        "model": Counter(),
        "tool_errors": Counter(),
        "skip_reasons": Counter(r.get("skipped") for r in recs if r.get("skipped")),
    }
    seen_errors: set[tuple[Any, Any]] = set()
    for r in handled:
        decisions = r.get("decisions") or []
        # a record from before the counters existed: count from the decisions
        if not any(r.get(f"calls_{k}") for k in ("seen", "kept", "repaired", "left")) and decisions:
            out["calls"]["seen"] += len(decisions)
            out["calls"]["kept"] += sum(d.get("action") == "keep" for d in decisions)
            out["calls"]["repaired"] += sum(d.get("action") in ("rename", "fit") for d in decisions)
            out["calls"]["left"] += sum(d.get("action") == "leave" for d in decisions)
            if r.get("mode") == "observe":
                out["would_repair"] += sum(d.get("action") in ("rename", "fit") for d in decisions)
        for d in decisions:
            out["action"][d.get("action") or "?"] += 1
            out["step"][d.get("step") or "?"] += 1
        for key, field in (("client", "client"), ("host", "host"), ("dialect", "dialect"), ("model", "model")):
            out[key][r.get(field) or "unknown"] += 1
        for e in r.get("tool_errors") or []:
            # a session's later requests replay the same transcript: count each call id once
            key = (e.get("call_id"), e.get("kind"))
            if e.get("call_id"):
                if key in seen_errors:
                    continue
                seen_errors.add(key)
            out["tool_errors"][e.get("kind") or "unknown"] += 1
    import statistics  # here: only the stats command needs it

    for key in ("ttfb_ms", "total_ms"):
        values = [float(r[key]) for r in handled if isinstance(r.get(key), (int, float))]
        out[f"median_{key}"] = statistics.median(values) if values else None
    out["calls"]["repaired"] -= out["would_repair"]
    return out


def _count_states(records: list[dict]) -> dict[str, int]:
    """Flows per state (:data:`STATE_ORDER`, zeros included): every handled flow, and a flow not
    handled because of a give-up (an internal error in the request hook)."""
    out = {name: 0 for name in STATE_ORDER}
    for r in records:
        state = outcome(r)
        if state is not None or is_handled(r):
            out[state or UNCHANGED] += 1
    return out


def _counter_line(label: str, counter: Counter) -> str:
    if not counter:
        return f"{label}: –"
    items = sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))
    return f"{label}: " + ", ".join(f"{k} {v}" for k, v in items)


def stats_text(records: Iterable[Any]) -> str:
    """Counts per decision action, ladder step, client, upstream host, dialect and model; tool
    error kinds (when records carry them; a call id seen again in a later request of the session
    counts once); totals of calls seen/kept/repaired/left (an observe-mode flow's repairs as
    "would be repaired": nothing was changed); median time
    to first byte and total. ``records`` holds record dicts or flows."""
    s = stats(records)
    if not s["flows"]:
        return "toolvocab stats: no flows with a toolvocab record"
    c = s["calls"]
    states = ", ".join(f"{name} {s['state'][name]}" for name in STATE_ORDER)
    lines = [
        f"toolvocab stats: {_plural(s['flows'], 'flow')} with a record — {s['handled']} handled "
        f"({s['observe']} in observe mode), {s['skipped']} not handled",
        f"flows by state: {states}",
        f"calls: {c['seen']} seen, {c['kept']} kept, {c['repaired']} repaired, {c['left']} left"
        + (f", {s['would_repair']} would be repaired (observe mode)" if s["would_repair"] else ""),
        _counter_line("decisions by action", s["action"]),
        _counter_line("decisions by ladder step", s["step"]),
        _counter_line("flows by client", s["client"]),
        _counter_line("flows by upstream host", s["host"]),
        _counter_line("flows by dialect", s["dialect"]),
        _counter_line("flows by model", s["model"]),
    ]
    if s["tool_errors"]:
        lines.append(_counter_line("tool errors by kind", s["tool_errors"]))
    lines.append(f"median ttfb {_ms(s['median_ttfb_ms'])}, median total {_ms(s['median_total_ms'])}")
    if s["skip_reasons"]:
        lines.append(_counter_line("not handled", s["skip_reasons"]))
    return "\n".join(lines)


# -- the tools a flow's client declared -----------------------------------------------------------


def flow_tools(flow: Any, shape: str = "normalized", *, upstream: bool = False) -> Any:
    """The tools ``flow``'s client declared, rendered as ``shape``; ``None`` when the flow is not
    an LLM request toolvocab understands (a TCP, UDP or DNS flow has no request). Uses the
    client's original request (metadata ``toolvocab_request`` when toolvocab changed it) and the
    record's rename map."""
    if getattr(flow, "request", None) is None:
        return None
    raw = flow.metadata.get(METADATA_REQUEST)
    if raw is None:
        try:
            raw = flow.request.content
        except ValueError:
            return None
    try:
        body = orjson.loads(raw or b"")
    except orjson.JSONDecodeError:
        return None
    dialect = detect(flow.request.method, flow.request.path, body)
    if dialect is None:
        return None
    record = flow.metadata.get(METADATA_KEY) or {}
    tools = Toolset(dialect.declared_tools(body))
    return render_tools(normalize_tools(tools, record.get("rename_map") or {}), shape, upstream=upstream)


def tools_text(flows: list[Any], shape: str, *, upstream: bool = False) -> str:
    """JSON text: one entry per flow with its dialect, client and declared tools."""
    out = []
    for flow in flows:
        rendered = flow_tools(flow, shape, upstream=upstream)
        if rendered is None:
            continue
        record = flow.metadata.get(METADATA_KEY) or {}
        out.append(
            {
                "flow": flow.id,
                "url": flow.request.pretty_url,
                "dialect": record.get("dialect"),
                "client": record.get("client"),
                "shape": shape,
                "tools": rendered,
            }
        )
    return orjson.dumps(out, option=orjson.OPT_INDENT_2).decode()
