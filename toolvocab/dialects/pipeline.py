"""The request pipeline: a request's bytes in, "not ours", "left as sent (why)" or "handled (the
plan, the record, the bytes to send)" out. No mitmproxy: the HTTP request hook and the Codex
WebSocket transport (``toolvocab.addons``) both call :func:`handle`, so a body is read, planned
and written the same way whichever way it came.

Two ways to read a body:

* **whole** (:func:`toolvocab.engine.jsonio.loads_checked`): a strict parse of everything, a
  body that repeats a key or holds what a strict reader refuses left as sent;
* **peeked** (``Dialect.peek``): a typed decode of only the fields planning reads (declared tools
  as the client's bytes, prompts, the transcript's call names, model, stream flag; replayed ids
  only checked to be ones the upstream takes), every other value skipped without being built.
  Taken when nothing needs the whole body: the plan changes nothing in the request, and the
  record wants no tool results. The result is
  :attr:`Handled.verified` ``False``: the skipped parts were not checked, so before anything
  changes *on the strength of this request* (the answer's first changed byte) the caller
  runs :func:`strict_read`, which gives what the whole read would have said. Anything the peek cannot
  read, or a plan that writes the request, goes the whole way.

Either way the plan, the record and the bytes sent are those the whole read gives
(``tests/unit/test_pipeline.py`` holds that over generated bodies).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import orjson

from toolvocab import dialects as _dialects
from toolvocab.dialects.base import Dialect
from toolvocab.dialects.base import Peek
from toolvocab.dialects.base import path_only
from toolvocab.engine import jsonio
from toolvocab.engine.clients import announces_windows
from toolvocab.engine.clients import client_headers
from toolvocab.engine.clients import identify_client
from toolvocab.engine.clients import user_agent_says_windows
from toolvocab.engine.errors import classify_tool_results
from toolvocab.engine.grammar import grammar_for
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.plan import Plan
from toolvocab.engine.plan import PlanCache
from toolvocab.engine.plan import cache_get
from toolvocab.engine.plan import make_plan
from toolvocab.engine.profiles import ProfileSet
from toolvocab.engine.profiles import is_access_gate
from toolvocab.engine.record import FlowRecord
from toolvocab.report import passed_note

#: How many distinct tool sections :class:`Caches` keeps built (an agent sends the same tools
#: every turn; a proxy in front of a few agents sees a few sections), and the longest section
#: (bytes) it keeps: a longer one is read afresh every time.
TOOLSET_CACHE = 16
TOOLSET_CACHE_BYTES = 1 << 20

#: How many distinct (plan, host, path, model, client) records :meth:`Caches.record` keeps.
RECORD_CACHE = 32

NOT_JSON = "request body is not JSON"
REPEATED_KEY = "request body repeats a key; passed through"

#: The scheme of an ``Authorization`` value of AWS Signature Version 4 or a scheme built on it
#: (``AWS4-HMAC-SHA256``, Alibaba Cloud's ``ACS3-HMAC-SHA256``, Tencent Cloud's
#: ``TC3-HMAC-SHA256``): the value also names ``SignedHeaders=`` and ``Signature=``.
_HMAC_SCHEME = re.compile(r"\b([A-Z0-9]{2,8}-HMAC-SHA256)\b")


class Caches:
    """What the pipeline keeps between requests: built :class:`Toolset` objects by declarations
    section (the last :data:`TOOLSET_CACHE`) and plans (:class:`PlanCache`). A Toolset is never
    changed after it is built, so flows may share one."""

    def __init__(self) -> None:
        self.toolsets: OrderedDict[tuple[Any, ...], Toolset] = OrderedDict()
        self.plans = PlanCache()
        #: Clients (host, path, user agent) whose last request was written: an agent sends the
        #: same tools and prompt every turn, so its next one will be too, and a peek before the
        #: whole read would be wasted. The way a request is read costs time, never changes what
        #: it gets (:func:`handle`). The last :data:`TOOLSET_CACHE` kept.
        self.writes: OrderedDict[tuple[str, str, str | None], None] = OrderedDict()
        self._windows: OrderedDict[tuple[str, ...], bool] = OrderedDict()
        #: The record a cached plan starts, by (plan, mode, dialect, host, path, model, client,
        #: access-gate note): its :class:`FlowRecord` and that record's dump as JSON bytes
        #: (``None`` when orjson cannot write it). The last :data:`RECORD_CACHE` kept.
        self._records: OrderedDict[tuple[Any, ...], tuple[Plan, FlowRecord, bytes | None]] = OrderedDict()

    def windows(self, texts: list[str], user_agent: str | None = None) -> bool:
        """Whether the agent runs on Windows: its ``User-Agent`` says so
        (:func:`user_agent_says_windows`), or :func:`announces_windows` of ``texts`` (its platform
        texts), kept for the last :data:`TOOLSET_CACHE` distinct texts (an agent's system prompt
        is the same every turn; the dict compares keys whole). Texts longer than
        :data:`TOOLSET_CACHE_BYTES` characters in all are read afresh."""
        if user_agent_says_windows(user_agent):
            return True
        key = tuple(texts)
        if sum(map(len, key)) > TOOLSET_CACHE_BYTES:
            return announces_windows(key)
        found = cache_get(self._windows, key)
        if found is None:
            found = self._windows[key] = announces_windows(key)
            if len(self._windows) > TOOLSET_CACHE:
                self._windows.popitem(last=False)
        return found

    def remember(self, key: tuple[str, str, str | None], written: bool) -> None:
        """Note whether the last request of client ``key`` was written (:attr:`writes`)."""
        if written:
            self.writes[key] = None
            self.writes.move_to_end(key)
            if len(self.writes) > TOOLSET_CACHE:
                self.writes.popitem(last=False)
        else:
            self.writes.pop(key, None)

    def _cached(self, key: tuple[Any, ...], size: int, build: Callable[[], Toolset]) -> Toolset:
        if size > TOOLSET_CACHE_BYTES:
            return build()
        tools = cache_get(self.toolsets, key)
        if tools is None:
            tools = self.toolsets[key] = build()
            if len(self.toolsets) > TOOLSET_CACHE:
                self.toolsets.popitem(last=False)
        return tools

    def toolset(self, dialect: Dialect, body: Any) -> Toolset:
        """The :class:`Toolset` of ``dialect.declared_tools(body)`` for a whole parsed body, keyed
        by the ``orjson`` text of ``dialect.declarations(body)`` (a dict compares keys whole, so
        two sections never share an entry). A section orjson cannot write (an integer beyond 64
        bits, a lone surrogate) is read afresh each time."""
        try:
            text = orjson.dumps(dialect.declarations(body))
        except orjson.JSONEncodeError:
            return Toolset(dialect.declared_tools(body))
        return self._cached((dialect.name, text), len(text), lambda: Toolset(dialect.declared_tools(body)))

    def peeked_toolset(self, dialect: Dialect, peek: Peek) -> Toolset:
        """The :class:`Toolset` of a peeked body, keyed by its declarations sections as sent.
        ``ValueError`` when a section is not JSON a strict parser accepts."""
        key = (dialect.name, "peeked", *peek.sections)
        size = sum(len(raw) for _, raw in peek.sections)
        return self._cached(key, size, lambda: Toolset(dialect.declared_tools(peek.declarations_body())))

    def record(
        self, plan: Plan, key: tuple[Any, ...], build: Callable[[], FlowRecord]
    ) -> tuple[FlowRecord, bytes | None]:
        """The record ``build()`` gives for a flow of the cached ``plan`` (``key``: everything
        else it is built of, hashable), made once per distinct (plan, key) and shared by every
        such flow: never changed (:func:`fresh_record` gives a flow a copy of its own, several
        times cheaper than building and validating the model); and its dump as ``orjson`` bytes
        (``None`` when orjson cannot write it: a lone surrogate), for ``flow.metadata`` while
        nothing has changed the flow's record."""
        full = (id(plan), *key)
        entry = cache_get(self._records, full)
        if entry is None or entry[0] is not plan:
            template = build()
            try:
                dumped: bytes | None = orjson.dumps(template.dump())
            except orjson.JSONEncodeError:
                dumped = None
            entry = self._records[full] = (plan, template, dumped)
            if len(self._records) > RECORD_CACHE:
                self._records.popitem(last=False)
        _, template, dumped = entry
        return template, dumped

    def holds(self, tools: Toolset) -> bool:
        """True when ``tools`` is one this cache keeps (a plan cached under another could
        never be found again, and would keep it alive)."""
        return any(t is tools for t in self.toolsets.values())


@dataclass
class Request:
    """One request as the pipeline reads it. ``content``: the body (bytes, decoded of any
    content-encoding); ``path`` with its query; ``header``: a header's value by lower-case
    name, or ``None``."""

    content: bytes
    method: str
    path: str
    host: str
    header: Callable[[str], str | None]


@dataclass
class Settings:
    """The addon's options as the pipeline uses them. ``mode``: ``auto``, ``repair`` or
    ``observe``; ``classify_results``: the record wants the transcript's tool errors (something
    saves or shows the flow); ``peek``: read only what planning needs when that is enough."""

    mode: str
    profiles: ProfileSet | None = None
    classify_results: bool = False
    peek: bool = True


@dataclass
class Skipped:
    """Left as sent: ``reason`` for the record, ``dialect`` when known."""

    reason: str
    dialect: str | None = None


@dataclass
class Handled:
    """A request this addon handles. ``content``: the bytes to send upstream instead of the
    client's, or ``None`` to send the client's; ``call_ids``: the replayed ids ``content`` sends
    as aliases (``Dialect.alias_call_ids``); ``verified``: the whole body was read strictly
    (else call :func:`strict_read` before changing the answer); ``wants_stream``, ``windows``: from
    the request (``Dialect.wants_stream``, :func:`announces_windows`). ``plan`` may be shared
    with other flows: it is never changed."""

    dialect: Dialect
    tools: Toolset
    plan: Plan
    record: FlowRecord
    wants_stream: bool
    windows: bool
    content: bytes | None = None
    call_ids: dict[str, str] = field(default_factory=dict)
    verified: bool = True
    #: ``record``'s dump as JSON bytes while nothing has changed the record since it was
    #: started (``orjson.loads`` gives what ``record.dump()`` gives), else ``None``.
    record_json: bytes | None = None
    #: ``record`` is a cached plan's, shared with other flows (:meth:`Caches.record`): never
    #: change it; :func:`fresh_record` gives a copy to change.
    shared: bool = False
    #: the upstream keeps the answer for a later request to continue from (``Dialect.keeps_answer``)
    stored: bool = False
    #: the request names stop sequences the API ends an answer at as naturally (``Dialect.stop_sequences``)
    stops: bool = False
    #: the request's tool choice forbids calls or allows only some (``Dialect.limits_calls``)
    limited: bool = False
    #: the scheme of the client's signature over the request (:func:`signature`): its bytes
    #: and headers are sent as the client signed them
    signed: str | None = None
    #: the declared tools the request's tool choice lets a call name (``Dialect.allowed_names``;
    #: ``None``: every one)
    allowed: frozenset[str] | None = None


def signature(request: Request) -> str | None:
    """What the client signed the request's bytes and headers with, or ``None``. A byte or a
    signed header changed on the way makes the upstream refuse the request (AWS: 403
    ``SignatureDoesNotMatch``; OCI: 401), so such a request is sent as signed (:func:`handle`).

    * an ``Authorization`` value naming ``SignedHeaders=`` and ``Signature=``: AWS Signature
      Version 4, whose canonical request holds the body's SHA-256 and each signed header's value
      (Bedrock through boto credentials,
      https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html), and the
      schemes built on it (:data:`_HMAC_SCHEME`); presigned, an ``X-Amz-Signature`` query
      parameter;
    * an ``Authorization: Signature …signature="…"`` value: HTTP Signatures
      (draft-cavage-http-signatures-12), as Oracle Cloud signs its APIs, its ``headers`` covering
      ``x-content-sha256`` and ``content-length``
      (https://docs.oracle.com/en-us/iaas/Content/API/Concepts/signingrequests.htm);
      The draft's own ``Signature`` header alike;
    * a ``Signature-Input`` header: HTTP Message Signatures (RFC 9421), which may cover
      ``content-digest``;
    * Baidu Cloud's ``bce-auth-v1/…`` (Qianfan's AK/SK signing, covering ``content-length``:
      https://intl.cloud.baidu.com/doc/Reference/s/njwvz1yfu-en) and Alibaba Cloud's ROA
      ``acs AK:signature`` (covering ``Content-MD5``);
    * a presigned Google Cloud URL (``X-Goog-Signature``).

    The name returned is one of these schemes' (never text of the header's own)."""
    value = request.header("authorization") or ""
    if "SignedHeaders=" in value and "Signature=" in value:
        scheme = _HMAC_SCHEME.search(value)
        return scheme.group(1) if scheme else "a signature with SignedHeaders"
    lowered = value.lower()
    if "signature=" in lowered and any(part.strip().lower().startswith("signature ") for part in value.split(",")):
        return "HTTP Signatures"
    if "signature=" in (request.header("signature") or "").lower():
        return "HTTP Signatures"
    if request.header("signature-input") is not None:
        return "HTTP Message Signatures"
    if lowered.lstrip().startswith("bce-auth-v1/"):
        return "bce-auth-v1"
    if re.match(r"\s*acs [^\s:]+:\S", value):
        return "acs (Alibaba Cloud ROA)"
    query = request.path.partition("?")[2].lower()
    if "x-amz-signature=" in query:
        return "AWS4-HMAC-SHA256 (presigned URL)"
    if "x-goog-signature=" in query:
        return "GOOG4 (presigned URL)"
    return None


def strict_read(content: bytes) -> tuple[Any, str | None]:
    """``content`` read whole and strictly (:func:`toolvocab.engine.jsonio.loads_checked`): the
    body (``None`` when a strict reader refuses it) and what the read says against changing
    anything for it: the :class:`Skipped` reason (:data:`NOT_JSON`: NaN, ``1e400``, invalid
    UTF-8, nesting deeper than :data:`toolvocab.engine.jsonio.MAX_DEPTH`; :data:`REPEATED_KEY`),
    or ``None``."""
    try:
        body, unique, _ = jsonio.loads_checked(content)
    except ValueError:
        return None, NOT_JSON
    return body, None if unique else REPEATED_KEY


def handle(
    request: Request,
    settings: Settings,
    caches: Caches,
    *,
    dialect: Dialect | None = None,
    accept: Callable[[Any], bool] | None = None,
) -> Handled | Skipped | None:
    """Read, plan and (modes ``auto`` and ``repair``) rewrite one request.

    A request the client signed over its bytes (:func:`signature`) is sent as signed: no name
    changes upstream, no prompt sentence, no replayed id aliased, :attr:`Handled.signed` says so
    (the caller leaves its headers as sent too); its answer is read and repaired as any (an
    answer is not signed). A plan that would still change it (repeated declarations) leaves it
    :class:`Skipped`.

    ``dialect``: the dialect of a body whose shape the caller has checked (the WebSocket
    transport's frames are Responses; planned even with no tools declared); ``accept(body)``: a
    test of the whole parsed body, ``None`` (not ours, nothing recorded) when it fails. Returns ``None`` for a request that is not ours to record, :class:`Skipped` for one
    left as sent with its reason, else :class:`Handled`. Raises only on a fault of its own.
    """
    if not (
        settings.peek
        and dialect is None
        and accept is None
        and settings.mode in ("auto", "repair")
        and not settings.classify_results
    ):
        # a WebSocket frame (``dialect`` given) is covered by no signature: a handshake's
        # Authorization signs the handshake
        return _whole(request, settings, caches, dialect, accept, signature(request) if dialect is None else None)
    signed = signature(request)
    client = (request.host, path_only(request.path), request.header("user-agent"))
    if client not in caches.writes:
        handled = _peeked(request, settings, caches, signed)
        if handled is not None:
            return handled
    result = _whole(request, settings, caches, dialect, accept, signed)
    caches.remember(client, isinstance(result, Handled) and result.content is not None)
    return result


def _peeked(request: Request, settings: Settings, caches: Caches, signed: str | None) -> Handled | None:
    """The peeked way (module docstring), or ``None`` to go the whole way."""
    for dialect in _dialects.DIALECTS:
        if not dialect.path_matches(request.method, request.path):
            continue
        peek = dialect.peek(request.method, request.path, request.content)
        if peek is None:
            return None  # this dialect may claim the body, or another: only the whole read can say
        try:
            tools = caches.peeked_toolset(dialect, peek)
        except ValueError:
            return None
        if not len(tools):
            return None  # left as sent either way; the whole read gives the record its reason
        plan, record, record_json, shared = _plan(
            request,
            settings,
            caches,
            dialect,
            tools,
            peek.model,
            peek.system_texts,
            peek.transcript_names,
            signed=signed,
        )
        if plan.changes_request:
            return None  # the body is written: only the whole read writes it
        return Handled(
            dialect,
            tools,
            plan,
            record,
            peek.stream,
            caches.windows(peek.platform_texts, request.header("user-agent")),
            verified=False,
            record_json=record_json,
            shared=shared,
            stored=peek.stored,
            stops=peek.stops,
            limited=peek.limited,
            signed=signed,
            allowed=peek.allowed,
        )
    return None


def _whole(
    request: Request,
    settings: Settings,
    caches: Caches,
    only: Dialect | None,
    accept: Callable[[Any], bool] | None,
    signed: str | None,
) -> Handled | Skipped | None:
    content = request.content
    try:
        body, unique, canonical = jsonio.loads_checked(content)
    except ValueError:
        # Not JSON a strict parser accepts (NaN, 1e400, invalid UTF-8, nesting deeper than
        # jsonio.MAX_DEPTH): neither the request nor its answer is touched.
        return None if accept is not None else Skipped(NOT_JSON)
    if accept is not None and not accept(body):
        return None
    if not unique:
        # Which of the repeated keys the upstream reads is its own choice: not ours to guess.
        # Looked at here, on every request read whole: the answer's rewrite changes more than
        # the resolver's decisions (ids, lifted calls), and a stream's first change cannot wait.
        return Skipped(REPEATED_KEY, only.name if only is not None else None)
    # A caller that names the dialect has seen the shape itself (a WebSocket frame).
    dialect = only if only is not None else _dialects.detect(request.method, request.path, body)
    if dialect is None:
        return Skipped(f"not an LLM API request this addon knows (POST {path_only(request.path)})")
    tools = caches.toolset(dialect, body)
    if not len(tools) and only is None:
        return Skipped("the request declares no tools", dialect.name)
    plan, record, _, shared = _plan(
        request,
        settings,
        caches,
        dialect,
        tools,
        dialect.model_of(request.path, body),
        dialect.system_texts(body),
        dialect.transcript_names(body),
        body,
        signed=signed,
    )
    if signed is not None and plan.changes_request:
        return Skipped(
            f"the request is signed ({signed}) and repeats a tool's declaration: sent as signed, answer left as sent",
            dialect.name,
        )
    if shared:
        record = fresh_record(record)  # this read may add to it
    if settings.classify_results:
        # The transcript's tool errors are for whoever reads the record (-w, toolvocab_record,
        # a UI); plain mitmdump shows no record, and a long transcript costs a walk over every
        # result.
        try:
            record.tool_errors = classify_tool_results(dialect.tool_results(body), record.client)
        except Exception as exc:  # classification is for the record only: never fatal
            record.notes.append(f"tool results not classified ({type(exc).__name__}: {exc})")
    handled = Handled(
        dialect,
        tools,
        plan,
        record,
        dialect.wants_stream(request.path, body),
        caches.windows(dialect.platform_texts(body), request.header("user-agent")),
        stored=dialect.keeps_answer(body),
        stops=dialect.stop_sequences(body),
        limited=dialect.limits_calls(body),
        signed=signed,
        allowed=dialect.allowed_names(body),
    )
    if settings.mode in ("auto", "repair") and signed is None:
        # The plan is applied to the parsed copy; the wire gets it only as a complete body
        # that reads back strictly, else the client's bytes stay.
        aliases = dialect.call_id_aliases(body)  # one read of the replayed ids, before any change
        layout = None
        if canonical and plan.changes_request and len(content) >= jsonio.LAYOUT_MIN_BYTES:
            # where the values the plan leaves alone lie: copied, not written again
            touched = dialect.request_keys(body, plan, aliases)
            if touched is not None:
                layout = jsonio.layout(content, body, touched, dialect.request_heads(body, plan))
        changed = dialect.apply_request(body, plan)
        if aliases:
            dialect.alias_call_ids(body, aliases)
        if changed or aliases:
            # loads refused any NaN or infinity, and a plan changes names, strings and tool
            # entries only: no walk for non-finite floats. Top-level values the plan cannot
            # touch (a transcript, when only the system prompt changes) are copied as sent.
            new = jsonio.rewrite(content, body, unique_keys=True, finite=True, layout=layout)
            if new is None:
                record.notes.append(
                    passed_note(
                        "the rewritten request body could not be written back exactly",
                        "the upstream got the client's request as it came",
                    )
                )
            else:
                handled.content = new
                handled.call_ids = aliases
                record.request_changed = True
                record.id_aliases = dict(aliases)
    return handled


def _plan(
    request: Request,
    settings: Settings,
    caches: Caches,
    dialect: Dialect,
    tools: Toolset,
    model: str | None,
    system_texts: list[str],
    transcript_names: list[str],
    body: Any = None,
    *,
    signed: str | None = None,
) -> tuple[Plan, FlowRecord, bytes | None, bool]:
    """The request-side plan (profile, grammar aliases, duplicates, prompt sentence; no name
    changed upstream for an answer the dialect cannot read, nor any name or prompt for a request
    ``signed`` over its bytes (:func:`signature`), ``body`` the parsed body or ``None`` when
    peeked), the record that starts with it, from what the dialect's readers give, that record's dump as JSON bytes
    when it is a cached one (:meth:`Caches.record`), else ``None``, and whether it is cached
    (shared with other flows: never to be changed)."""
    host, path = request.host, request.path
    profiles = settings.profiles
    profile = profiles.select(host, path, model) if profiles else None
    note = "profiles are never applied at an access gate (" + host + ")" if profiles and is_access_gate(host) else None
    grammar = grammar_for(dialect.name, host, profile.grammar if profile else None)
    # an answer toolvocab cannot read could not have a name given back: none changes upstream
    unread = dialect.answers_unread(path, body)
    cached = caches.holds(tools)
    planner = caches.plans.plan if cached else make_plan
    plan = planner(
        tools,
        system_texts,
        add_sentence=settings.mode in ("auto", "observe") and signed is None,
        grammar=grammar,
        profile=profile,
        transcript_names=transcript_names,
        renames=unread is None and signed is None,
    )
    if unread is not None:
        note = "; ".join(n for n in (note, f"no tool name changed upstream: {unread}") if n)
    if signed is not None:
        note = "; ".join(
            n
            for n in (
                note,
                f"the request is signed over its bytes ({signed}): sent as signed, no name or prompt changed upstream",
            )
            if n
        )
    client = identify_client(client_headers(request.header))
    bare_path = path_only(path)

    def build() -> FlowRecord:
        return FlowRecord(
            mode=settings.mode,
            dialect=dialect.name,
            host=host,
            path=bare_path,
            model=model,
            client=client,
            declared=tools.names(),
            rename_map=plan.rename_map,
            duplicates=plan.duplicates,
            renames=plan.renames,
            profile=plan.profile,
            grammar=plan.grammar,
            prompt_sentence=plan.prompt_sentence,
            prompt_names=plan.unmentioned,
            notes=list(plan.skipped) + ([note] if note else []),
        )

    if not (cached and caches.plans.holds(plan)):
        return plan, build(), None, False  # a plan made for this flow alone: so is its record
    record, dumped = caches.record(
        plan, (settings.mode, dialect.name, host, bare_path, model, client, note, id(tools)), build
    )
    return plan, record, dumped, True


def fresh_record(template: FlowRecord) -> FlowRecord:
    """A copy of ``template`` that shares no list or dict with it (the :class:`Rename` entries,
    which nothing changes, are shared): what building it again gives, without the validation."""
    return template.model_copy(
        update={
            "declared": list(template.declared),
            "rename_map": dict(template.rename_map),
            "duplicates": {name: list(upstream) for name, upstream in template.duplicates.items()},
            "renames": list(template.renames),
            "id_aliases": dict(template.id_aliases),
            "prompt_names": list(template.prompt_names),
            "decisions": list(template.decisions),
            "tool_errors": list(template.tool_errors),
            "notes": list(template.notes),
        }
    )
