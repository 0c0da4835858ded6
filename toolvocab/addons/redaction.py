"""Credentials never reach a saved flow: every save (``-w``, save commands, ``toolvocab_record``,
a HAR export: ``hardump``, ``save.har``) writes a redacted copy of the flow's state; the live
flow, the UI and client replay keep the real values. Option: ``toolvocab_redact``.
"""

from __future__ import annotations

import logging
import re
import weakref
from typing import Any

from mitmproxy import exceptions
from mitmproxy import http

from toolvocab.addons import decoding
from toolvocab.addons.options import Configurable
from toolvocab.addons.options import check_deferred
from toolvocab.report import METADATA_HEADERS
from toolvocab.report import METADATA_UPSTREAM

logger = logging.getLogger(__name__)


class ToolVocabRedaction(Configurable):
    """Installs :func:`install_redaction` on every flow as early as it exists (``requestheaders``:
    a client that disconnects mid-body never reaches the request hook), again in ``request`` and
    in ``error`` (for flows that began before the addon loaded)."""

    def __init__(self) -> None:
        self.redact = True
        self._said = False  # running() has said the setting: a change is said from then on

    def load(self, loader: Any) -> None:
        """Register ``toolvocab_redact``."""
        loader.add_option(
            name="toolvocab_redact",
            typespec=str,
            default="true",
            help=(
                "true or false. Redact credentials (Authorization, x-api-key, x-goog-api-key, cookies, any header "
                "or query parameter named like a key, token, secret or auth; the proxyauth password) from every flow "
                "whenever it is saved (-w, save commands, toolvocab_record, a HAR). "
                "The live traffic and the flow shown in the UI keep them."
            ),
        )
        check_deferred(loader, ("toolvocab_redact",), omitted={"toolvocab_redact": "true"})

    def _configure(self, updated: set[str]) -> None:
        """Validate ``toolvocab_redact``; raises ``OptionsError``. Also points mitmproxy's HAR
        writer at redacted copies (:func:`redact_har`), once."""
        from mitmproxy import ctx

        redact_har(ctx.master.addons.get("savehar"))

        if "toolvocab_redact" in updated:
            # A string, checked here: a bool option's bad value ("maybe") fails inside mitmproxy's
            # deferred option handling, silently, and the addon would run with its defaults.
            value = str(ctx.options.toolvocab_redact).strip().lower()
            if value not in ("true", "false", "yes", "no", "1", "0", "on", "off"):
                raise exceptions.OptionsError(
                    f"toolvocab_redact: {ctx.options.toolvocab_redact!r} is not true or false"
                )
            redact = value in ("true", "yes", "1", "on")
            if redact != self.redact and self._said:
                logger.info("toolvocab: toolvocab_redact %s from now on", "on" if redact else "off")
            self.redact = redact

    def running(self) -> None:
        """Say at start when redaction is off: every saved flow then keeps the credentials."""
        self._said = True  # a change from now on is said in the log
        if not self.redact:
            logger.warning("toolvocab: toolvocab_redact is off: flows saved from now on keep their credentials")

    def install(self, flow: http.HTTPFlow) -> None:
        """Redact whatever of ``flow`` is saved from now on, when ``toolvocab_redact`` is on."""
        if self.redact:
            install_redaction(flow)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        self.install(flow)

    def request(self, flow: http.HTTPFlow) -> None:
        self.install(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self.install(flow)


def redact_state(state: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of a flow's saved state with credentials replaced by ``<redacted>``.

    Credential headers and trailers (:func:`is_credential_header`: ``Authorization``,
    ``Proxy-Authorization``, ``x-api-key``, ``Cookie``, ``Ocp-Apim-Subscription-Key``,
    ``cf-aig-authorization``, ``x-amz-security-token``…; names in any case), credential query
    parameters in the path (:func:`is_credential_param`: ``key``, ``api_key``, ``token``…; names
    percent-decoded, any case), and the password mitmproxy's ``proxyauth`` keeps in
    ``metadata["proxyauth"]`` (``(user, password)``: mitmproxy ``addons/proxyauth.py``). Each
    credential value found there (for ``Bearer``/``Basic`` and the like, also the token after the
    scheme; for cookies, each cookie's value, not a ``Set-Cookie`` attribute) of 8 bytes or more is
    then replaced wherever else it occurs in the state: bodies — content-decoded first when they
    are ``gzip``, ``deflate``, ``br`` or ``zstd`` (and written encoded again), the upstream's
    original answer in ``toolvocab_upstream`` as its response's body — a partial body of an
    aborted request, metadata, WebSocket messages, the error message. ``state`` is mitmproxy's
    ``Flow.get_state()`` dict (headers as ``(name, value)`` byte pairs); the input is not modified.
    """
    import copy

    out = copy.deepcopy(state)
    secrets: set[bytes] = set()
    for side in ("request", "response"):
        message = out.get(side)
        if not isinstance(message, dict):
            continue
        for part in ("headers", "trailers"):
            if isinstance(message.get(part), (list, tuple)):
                message[part] = _redact_fields(message[part], secrets)
    request = out.get("request")
    if isinstance(request, dict) and isinstance(request.get("path"), bytes):
        request["path"] = _redact_query(request["path"], secrets)
    metadata = out.get("metadata")
    auth = metadata.get("proxyauth") if isinstance(metadata, dict) else None
    if isinstance(auth, (list, tuple)) and len(auth) == 2:
        user, password = auth
        if isinstance(password, str):
            secrets.add(password.encode("utf-8", "surrogateescape"))
        metadata["proxyauth"] = type(auth)([user, "<redacted>"])
    if isinstance(out.get("backup"), dict):  # the state before an edit in the UI
        out["backup"] = redact_state(out["backup"])
    long_secrets = sorted((s for s in secrets if len(s) >= 8), key=len, reverse=True)
    # A value holding another (``Bearer sk-…`` and ``sk-…``; a Cookie header and its cookies'
    # values) is cut by the one it holds: one spelling, whether a text has it whole or in pieces.
    long_secrets = [s for s in long_secrets if not any(t != s and t in s for t in long_secrets)]
    if long_secrets:
        response = out.get("response")
        stream = isinstance(response, dict) and b"text/event-stream" in _header(response, b"content-type").lower()
        for side in ("request", "response"):
            message = out.get(side)
            if isinstance(message, dict) and isinstance(message.get("content"), bytes):
                before = message["content"]
                message["content"] = _scrub_body(before, message, long_secrets, stream and side == "response")
                if message["content"] != before:
                    _fix_length(message, before)
        if isinstance(metadata, dict) and isinstance(metadata.get(METADATA_UPSTREAM), bytes):
            _scrub_upstream(metadata, response, long_secrets, stream)
        out = _scrub(out, long_secrets)
        ws = out.get("websocket")
        if isinstance(ws, dict) and isinstance(ws.get("messages"), list):
            ws["messages"] = _scrub_split_messages(ws["messages"], long_secrets)
    return out


#: Header names that are credentials whatever their spelling around them.
_REDACT_NAMES = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "apikey",
        "cookie",
        "set-cookie",
    }
)
#: A header or parameter name part (split at ``-`` and ``_``) that makes it a credential:
#: ``cf-aig-authorization``, ``helicone-auth``, ``x-amz-security-token``, ``x-portkey-api-key``.
_SECRET_PARTS = frozenset({"authorization", "auth", "token", "secret", "password", "passwd", "apikey"})
#: A last name part that makes a name with a secret part a count or a setting, not a credential:
#: ``x-amzn-bedrock-input-token-count``, ``auth_mode``, ``token_type``.
_NOT_SECRET_ENDS = frozenset({"count", "counts", "limit", "remaining", "reset", "type", "mode", "usage"})
#: Adjacent name parts that make it a credential: ``ocp-apim-subscription-key``, ``x-litellm-api-key``.
_SECRET_PAIRS = frozenset({("api", "key"), ("subscription", "key"), ("access", "key"), ("secret", "key")})
#: Query parameter names that are credentials on their own (``?key=``: Gemini; ``?sig=``: Azure SAS).
_SECRET_PARAMS = frozenset({"key", "sig", "signature", "code"})
_AUTH_SCHEME = re.compile(rb"^\s*[A-Za-z][A-Za-z0-9_-]*\s+(\S+)\s*$")
_PARAM = re.compile(rb"([?&;])([^=&#;?]*)=([^&#;]*)")


def _parts(name: str) -> list[str]:
    return [p for p in re.split(r"[-_.\s]+", name.strip().lower()) if p]


def is_credential_header(name: str) -> bool:
    """A header (or trailer) whose value is a credential: :data:`_REDACT_NAMES`, or a name with a
    part of :data:`_SECRET_PARTS` or a pair of :data:`_SECRET_PAIRS` (``Ocp-Apim-Subscription-Key``,
    ``cf-aig-authorization``, ``x-amz-security-token``, ``Helicone-Auth``) that does not end as a
    count or setting does (:data:`_NOT_SECRET_ENDS`: ``x-amzn-bedrock-input-token-count``)."""
    parts = _parts(name)
    if name.strip().lower() in _REDACT_NAMES:
        return True
    if parts and parts[-1] in _NOT_SECRET_ENDS:
        return False
    return any(p in _SECRET_PARTS for p in parts) or any(pair in _SECRET_PAIRS for pair in zip(parts, parts[1:]))


def is_credential_param(name: str) -> bool:
    """A query parameter whose value is a credential (``name`` percent-decoded): a credential
    header's name (:func:`is_credential_header`: ``api_key``, ``access_token``, ``auth``,
    ``subscription-key``), one of :data:`_SECRET_PARAMS` (``key``, ``sig``), or one whose last
    part is ``signature``: a presigned URL's (``X-Amz-Signature``, ``X-Goog-Signature``) lets
    whoever holds it send the request until it expires (``use_sig``, ``signature_version`` are
    settings)."""
    parts = _parts(name)
    return (
        name.strip().lower() in _SECRET_PARAMS
        or (bool(parts) and parts[-1] == "signature")
        or is_credential_header(name)
    )


def _redact_query(path: bytes, secrets: set[bytes]) -> bytes:
    """``path`` with the value of each credential query parameter redacted (added to ``secrets``,
    as sent and percent-decoded)."""
    from urllib.parse import unquote_to_bytes

    def one(match: re.Match[bytes]) -> bytes:
        name = unquote_to_bytes(match.group(2).replace(b"+", b" ")).decode("utf-8", "replace")
        if not is_credential_param(name):
            return match.group(0)
        value = match.group(3)
        secrets.update({value, unquote_to_bytes(value)})
        return match.group(1) + match.group(2) + b"=<redacted>"

    return _PARAM.sub(one, path)


def _redact_fields(fields: Any, secrets: set[bytes]) -> list[Any]:
    """Header or trailer ``(name, value)`` pairs with credential values redacted; the values
    (a scheme's token; each cookie's value) are added to ``secrets``."""
    out = []
    for pair in fields:
        try:
            name, value = pair
        except (TypeError, ValueError):
            out.append(pair)
            continue
        text = name.decode("latin-1") if isinstance(name, bytes) else name
        if isinstance(text, str) and is_credential_header(text):
            raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
            if isinstance(raw, bytes):
                secrets.add(raw.strip())
                scheme = _AUTH_SCHEME.match(raw)
                if scheme:
                    secrets.add(scheme.group(1))
                lowered = text.strip().lower()
                if lowered == "cookie":
                    secrets.update(c.partition(b"=")[2].strip() for c in raw.split(b";"))
                elif lowered == "set-cookie":  # the cookie's value; its attributes are no secret
                    secrets.add(raw.split(b";", 1)[0].partition(b"=")[2].strip())
            value = b"<redacted>" if isinstance(value, bytes) else "<redacted>"
        out.append((name, value))
    return out


def _header(message: Any, name: bytes) -> bytes:
    """The first value of header ``name`` (lower case) in a saved message's ``(name, value)``
    byte pairs, ``b""`` when it has none."""
    headers = message.get("headers") if isinstance(message, dict) else None
    for pair in headers if isinstance(headers, (list, tuple)) else ():
        try:
            key, value = pair
        except (TypeError, ValueError):
            continue
        if isinstance(key, bytes) and key.strip().lower() == name and isinstance(value, bytes):
            return value.strip()
    return b""


def _fix_length(message: dict[str, Any], before: bytes) -> None:
    """A saved message whose body was scrubbed says its new length: a ``Content-Length`` that gave
    the old body's (``before``) gives the new one's, as mitmproxy's own content setter would."""
    headers = message.get("headers")
    if not isinstance(headers, list):
        return
    for k, pair in enumerate(headers):
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], bytes):
            if pair[0].strip().lower() == b"content-length" and pair[1].strip() == str(len(before)).encode():
                headers[k] = type(pair)((pair[0], str(len(message["content"])).encode()))


def _scrub_upstream(metadata: dict, response: Any, secrets: list[bytes], stream: bool) -> None:
    """The upstream's original answer in ``metadata`` scrubbed as :func:`_scrub_body` scrubs a
    body. One toolvocab decoded as it streamed (its ``content-encoding``, taken off the saved
    response, kept in ``toolvocab_headers``) is read as the client got it
    (:func:`toolvocab.addons.decoding.decode_whole`); when a secret is found there, the scrubbed
    decoded bytes are kept and the kept ``content-encoding`` is dropped (a replay starts from
    those bytes, not encoded)."""
    upstream = metadata[METADATA_UPSTREAM]
    changed = metadata.get(METADATA_HEADERS)
    kept = changed.get("response") if isinstance(changed, dict) else None
    coding = kept.get("content-encoding") if isinstance(kept, dict) else None
    if not isinstance(coding, str):
        metadata[METADATA_UPSTREAM] = _scrub_body(upstream, response, secrets, stream)
        return
    plain = decoding.decode_whole(upstream, coding)
    scrubbed = _scrub_plain(plain, secrets, stream)
    if scrubbed != plain:
        metadata[METADATA_UPSTREAM] = scrubbed
        kept["content-encoding"] = None


def _scrub_body(body: bytes, message: Any, secrets: list[bytes], stream: bool) -> bytes:
    """A body of ``message`` (a saved request or response, for its ``content-encoding``) with
    ``secrets`` replaced where they occur in its decoded bytes (encoded again; mitmproxy
    ``net/encoding.py``), and for an event stream (``stream``) where its events' text fragments
    spell one only when joined (:func:`_scrub_split`). As it is when the encoding is not one
    mitmproxy reads or the body does not decode."""
    from mitmproxy.net import encoding as codec

    encoding = _header(message, b"content-encoding").lower().decode("latin-1")
    encoded = encoding not in ("", "identity")
    decoded: Any = body
    if encoded:
        try:
            decoded = codec.decode(body, encoding)
        except (ValueError, TypeError):
            return body
        if not isinstance(decoded, bytes):
            return body
    scrubbed = _scrub_plain(decoded, secrets, stream)
    if scrubbed == decoded:
        return body
    return codec.encode(scrubbed, encoding) if encoded else scrubbed


def _scrub_plain(plain: bytes, secrets: list[bytes], stream: bool) -> bytes:
    """``plain`` (a body's decoded bytes) with ``secrets`` replaced where they occur
    (:func:`_scrub`), and for an event stream (``stream``) where its events' text fragments spell
    one only when joined (:func:`_scrub_split`)."""
    scrubbed = _scrub(plain, secrets)
    return _scrub_split(scrubbed, secrets) if stream else scrubbed


#: The keys whose string values are the pieces of a streamed text or argument: Anthropic
#: ``delta.partial_json`` / ``text`` / ``thinking``, Chat ``delta.content`` and
#: ``function.arguments``, Responses ``delta`` and ``arguments``.
_FRAGMENT_KEYS = frozenset({"partial_json", "text", "thinking", "content", "arguments", "delta"})


def _scrub_split(body: bytes, secrets: list[bytes]) -> bytes:
    """An event stream with each secret its events' text fragments spell only when joined cut
    out (:func:`_cut_joined`); the events changed are written again
    (:meth:`SSEEvent.with_json`), every other byte as it was. Events are cut as a client's parser
    cuts them (:class:`SSEParser`)."""
    from toolvocab.dialects.sse import SSEEvent
    from toolvocab.dialects.sse import SSEParser

    parser = SSEParser()
    raws = parser.feed_raw(body) + parser.close_raw()
    rest = parser.flush()
    if rest:  # an unfinished last event: a reader of the saved file still reads it
        raws.append(rest)
    events = [SSEEvent.parse(raw) for raw in raws]
    datas = [_lenient(event.data) for event in events]
    changed = _cut_joined(datas, secrets)
    if not changed:
        return body
    out = []
    for n, raw in enumerate(raws):
        value = changed.get(n)
        try:
            out.append(events[n].with_json(value).raw if value is not None else raw)
        except Exception:  # a value no strict writer takes (a number past any float): not written
            out.append(raw)
    return b"".join(out)


def _lenient(data: Any) -> Any:
    """An event's or frame's data as any JSON reader reads it: strictly
    (:mod:`toolvocab.engine.jsonio`), else as Python's ``json`` does (the last of a repeated
    key, a number past any float, deep nesting): a client may read what the strict reader
    refuses. ``None`` for no data or no JSON."""
    if data is None:
        return None
    import json

    from toolvocab.engine import jsonio

    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    try:
        return jsonio.loads(raw)
    except Exception:
        pass
    try:
        return json.loads(raw)
    except Exception:  # not JSON (or too deep even for json): no fragments
        return None


def _scrub_split_messages(messages: list[Any], secrets: list[bytes]) -> list[Any]:
    """Saved WebSocket messages (mitmproxy's state tuples: ``(type, from_client, content, …)``)
    whose JSON text frames from the server spell a secret only when their fragments are joined
    (Codex's Responses socket: ``response.function_call_arguments.delta`` frames), that secret cut
    out (:func:`_cut_joined`); the frames changed hold compact JSON, every other as it was."""
    from toolvocab.engine import jsonio

    server = []
    for k, message in enumerate(messages):
        if isinstance(message, (list, tuple)) and len(message) > 2 and message[1] is False:
            content = message[2]
            data = _lenient(content) if isinstance(content, (bytes, str)) and message[0] == 1 else None
            server.append((k, data))
    changed = _cut_joined([data for _, data in server], secrets)
    if not changed:
        return messages
    out = list(messages)
    for n, value in changed.items():
        k = server[n][0]
        message = list(out[k])
        try:
            written = jsonio.dumps(value)
        except Exception:  # a value no strict writer takes: the frame stays
            continue
        message[2] = written if isinstance(message[2], bytes) else written.decode("utf-8", "surrogateescape")
        out[k] = type(out[k])(message)
    return out


def _cut_joined(datas: list[Any], secrets: list[bytes]) -> dict[int, Any]:
    """The parsed events ``datas`` whose text fragments spell a secret only when joined — a
    streamed tool call's arguments cut inside the key (``…echo sk-ant-`` | ``dummy-12345…``) —
    with that secret cut out: the fragment where it starts gets ``<redacted>`` in its place, the
    others lose their part of it (secrets that overlap are cut as one span). Fragments are the
    strings under :data:`_FRAGMENT_KEYS`, joined in order per stream they belong to
    (:func:`_channel`: a content block, a choice's tool call, an output item), as a client joins
    them. Index of each event changed -> its new value (the others are not in it)."""
    from bisect import bisect_right

    texts = [s.decode("utf-8", "surrogateescape") for s in secrets]
    channels: dict[Any, list[tuple[int, list[Any], str]]] = {}
    for n, data in enumerate(datas):
        for path, text in _fragments(data, []):
            channels.setdefault(_channel(data, path), []).append((n, path, text))
    cuts: dict[tuple[Any, int], list[tuple[int, int, bool]]] = {}  # (channel, slot) -> (from, to, marker)
    for channel, slots in channels.items():
        joined = "".join(text for _, _, text in slots)
        spans = []
        for secret in texts:
            pos = joined.find(secret)
            while pos != -1:
                spans.append((pos, pos + len(secret)))
                pos = joined.find(secret, pos + 1)
        if not spans:
            continue
        merged: list[list[int]] = []
        for lo, hi in sorted(spans):
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        starts, at = [], 0
        for _, _, text in slots:
            starts.append(at)
            at += len(text)
        for lo, hi in merged:
            k = bisect_right(starts, lo) - 1
            first = True
            while k < len(slots) and starts[k] < hi:
                a, b = max(lo, starts[k]), min(hi, starts[k] + len(slots[k][2]))
                if a < b:
                    cuts.setdefault((channel, k), []).append((a - starts[k], b - starts[k], first))
                    first = False
                k += 1
    changed: dict[int, Any] = {}
    for (channel, k), spans_of_slot in cuts.items():
        n, path, text = channels[channel][k]
        for lo, hi, marker in sorted(spans_of_slot, reverse=True):  # disjoint: cut from the end
            text = text[:lo] + ("<redacted>" if marker else "") + text[hi:]
        changed[n] = _copy_set(changed.get(n, datas[n]), path, text)
    return changed


#: The fields of an event that name the stream its fragments belong to: Anthropic's block
#: ``index``, Responses' ``output_index`` / ``item_id`` / ``content_index``.
_CHANNEL_KEYS = ("index", "output_index", "item_id", "content_index")


def _channel(data: Any, path: list[Any]) -> tuple[Any, ...]:
    """Which stream of fragments the string at ``path`` in event ``data`` continues, as a
    client's accumulator joins them: the event's own :data:`_CHANNEL_KEYS`, the string's key
    (``text``, ``partial_json``, ``arguments``…: a block's starting text and its deltas are one
    stream), and along the path each list element's ``index`` (Chat's choice and tool call: a
    client joins them by it, not by their place in the list), else its place."""
    top = tuple(repr(data.get(k)) for k in _CHANNEL_KEYS) if isinstance(data, dict) else ()  # any value: hashable
    along: list[Any] = []
    node = data
    for step in path[:-1]:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(step, int):
            along.append(node.get("index", step) if isinstance(node, dict) else step)
    return (*top, repr(path[-1]), *map(repr, along))


#: How deep in an event fragments are looked for: the wire formats' are at depth 6 at most
#: (Chat's ``choices[].delta.tool_calls[].function.arguments``); deeper nesting costs time on
#: every fragment and holds none.
_FRAGMENT_DEPTH = 12


def _fragments(value: Any, path: list[Any]) -> list[tuple[list[Any], str]]:
    """``(path, string)`` of each string under a key of :data:`_FRAGMENT_KEYS` in ``value``, in
    order, down to :data:`_FRAGMENT_DEPTH`."""
    out: list[tuple[list[Any], str]] = []
    if len(path) >= _FRAGMENT_DEPTH:
        return out
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, str):
            if key in _FRAGMENT_KEYS:
                out.append(([*path, key], item))
        else:
            out += _fragments(item, [*path, key])
    return out


def _copy_set(value: Any, path: list[Any], text: str) -> Any:
    """``value`` with the string at ``path`` set to ``text`` (containers on the path copied)."""
    if not path:
        return text
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _copy_set(value[head], rest, text)
    return copy


def _scrub(value: Any, secrets: list[bytes]) -> Any:
    """``value`` (a saved state, any nesting of dicts, lists, tuples) with every occurrence of
    each secret in its bytes and strings replaced by ``<redacted>``."""
    if isinstance(value, bytes):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, b"<redacted>")
        return value
    if isinstance(value, str):
        for secret in secrets:
            text = secret.decode("utf-8", "surrogateescape")
            if text in value:
                value = value.replace(text, "<redacted>")
        return value
    if isinstance(value, dict):
        return {k: _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    if isinstance(value, tuple):
        return tuple(_scrub(v, secrets) for v in value)
    return value


def redact_har(savehar: Any) -> None:
    """Make mitmproxy's HAR writer (the ``savehar`` addon: ``hardump``, ``save.har``) write each
    flow that carries :func:`install_redaction` from its redacted state. Its ``make_har`` reads
    headers, cookies, the query and the body off the flow itself (``flow_entry``, mitmproxy
    ``addons/savehar.py``), not through ``get_state``; its ``flow_entry`` is wrapped on that one
    instance to read a flow rebuilt from the redacted state instead (same connection ids, so
    its timings are those of the flow). ``savehar`` ``None`` (not loaded) or already wrapped:
    nothing to do."""
    entry = getattr(savehar, "flow_entry", None)
    if entry is None or getattr(entry, "_toolvocab_redacting", False):
        return

    def flow_entry(flow: Any, servers_seen: Any) -> Any:
        if getattr(flow, "_toolvocab_redacting", False):
            flow = type(flow).from_state(flow.get_state())
        return entry(flow, servers_seen)

    flow_entry._toolvocab_redacting = True  # type: ignore[attr-defined]
    savehar.flow_entry = flow_entry


def install_redaction(flow: http.HTTPFlow) -> None:
    """Make every save of ``flow`` write a redacted copy, leaving the flow itself untouched.

    mitmproxy's writers (``-w``, ``save.file``, ``FlowWriter``) serialize ``flow.get_state()``;
    shadowing it on this one instance redacts what is written while the live flow, the UI and
    client replay keep the real values. The flow's own uses of its state see the real one:
    ``backup`` (an edit, a client replay; ``revert`` restores it), ``modified`` and ``copy``
    (mitmweb's Duplicate), whose copy is redacted when saved in turn (mitmproxy ``flow.py``:
    ``backup``, ``revert``, ``modified``, ``copy``; ``coretypes/serializable.py``: ``copy``).

    The shadows hold the flow by weak reference: one held strongly would make the flow a
    reference cycle, which CPython frees only when its cyclic garbage collector next runs
    (https://docs.python.org/3/library/gc.html), not when the last holder lets it go. (Inside
    mitmdump 11 and 12 a finished flow waits for that collector anyway, held by mitmproxy's own
    ``HttpStream`` layer; a flow driven in process, as ``toolvocab replay`` does, is freed at
    once.) A shadow called after its flow is gone raises ``ReferenceError``. ``copy.copy`` or
    ``copy.deepcopy`` of the flow (mitmproxy copies with ``Flow.copy``, above, never these) shares
    its shadows: the copy's saves write the original's state, and raise once it is gone.
    """
    if getattr(flow, "_toolvocab_redacting", False):
        return
    cls = type(flow)
    ref = weakref.ref(flow)

    def alive() -> http.HTTPFlow:
        this = ref()
        if this is None:
            raise ReferenceError("the flow this redaction was installed on is gone")
        return this

    def get_state() -> Any:
        return redact_state(cls.get_state(alive()))

    def unredacted(method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            this = alive()
            shadow = this.__dict__.pop("get_state", None)
            try:
                return method(this, *args, **kwargs)
            finally:
                if shadow is not None:
                    this.get_state = shadow  # type: ignore[method-assign]

        return call

    def copy() -> Any:
        duplicate = unredacted(cls.copy)()
        install_redaction(duplicate)
        return duplicate

    flow.get_state = get_state  # type: ignore[method-assign]
    flow.backup = unredacted(cls.backup)  # type: ignore[method-assign]
    flow.modified = unredacted(cls.modified)  # type: ignore[method-assign]
    flow.copy = copy  # type: ignore[method-assign]
    flow._toolvocab_redacting = True  # type: ignore[attr-defined]
