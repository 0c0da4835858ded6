"""Credentials never reach a saved flow: every save (``-w``, save commands, ``toolvocab_record``,
a HAR export: ``hardump``, ``save.har``) writes a redacted copy of the flow's state; the live
flow, the UI and client replay keep the real values. Option: ``toolvocab_redact``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from mitmproxy import exceptions
from mitmproxy import http

from toolvocab.addons.options import Configurable
from toolvocab.report import METADATA_UPSTREAM

logger = logging.getLogger(__name__)


class ToolVocabRedaction(Configurable):
    """Installs :func:`install_redaction` on every flow as early as it exists (``requestheaders``:
    a client that disconnects mid-body never reaches the request hook), again in ``request`` and
    in ``error`` (for flows that began before the addon loaded)."""

    def __init__(self) -> None:
        self.redact = True

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
            self.redact = value in ("true", "yes", "1", "on")

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
    if long_secrets:
        bodies = {}
        for side in ("request", "response"):
            message = out.get(side)
            if isinstance(message, dict):
                encoding = _content_encoding(message.get("headers"))
                bodies[side] = encoding
                if isinstance(message.get("content"), bytes):
                    message["content"] = _scrub_encoded(message["content"], encoding, long_secrets)
        if isinstance(metadata, dict) and isinstance(metadata.get(METADATA_UPSTREAM), bytes):
            metadata[METADATA_UPSTREAM] = _scrub_encoded(
                metadata[METADATA_UPSTREAM], bodies.get("response"), long_secrets
            )
        out = _scrub(out, long_secrets)
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
_SECRET_PARTS = frozenset(
    {"authorization", "auth", "token", "secret", "password", "passwd", "apikey", "credential", "credentials"}
)
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
    ``cf-aig-authorization``, ``x-amz-security-token``, ``Helicone-Auth``)."""
    parts = _parts(name)
    if name.strip().lower() in _REDACT_NAMES or any(p in _SECRET_PARTS for p in parts):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(parts, parts[1:]))


def is_credential_param(name: str) -> bool:
    """A query parameter whose value is a credential (``name`` percent-decoded): a credential
    header's name (:func:`is_credential_header`: ``api_key``, ``access_token``, ``auth``,
    ``subscription-key``) or one of :data:`_SECRET_PARAMS` (``key``, ``sig``)."""
    return name.strip().lower() in _SECRET_PARAMS or is_credential_header(name)


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


def _content_encoding(headers: Any) -> str | None:
    """The ``content-encoding`` of saved ``(name, value)`` header pairs, lower case, or ``None``."""
    for pair in headers if isinstance(headers, (list, tuple)) else ():
        try:
            name, value = pair
        except (TypeError, ValueError):
            continue
        if isinstance(name, bytes) and name.strip().lower() == b"content-encoding" and isinstance(value, bytes):
            return value.strip().lower().decode("latin-1")
    return None


def _scrub_encoded(body: bytes, encoding: str | None, secrets: list[bytes]) -> bytes:
    """A body with ``content-encoding`` ``encoding`` scrubbed of ``secrets`` where they occur in
    its decoded bytes (encoded again; mitmproxy ``net/encoding.py``); as it is when the encoding
    is none or not one mitmproxy reads, or the body does not decode."""
    if not encoding or encoding == "identity":
        return body
    from mitmproxy.net import encoding as codec

    try:
        decoded = codec.decode(body, encoding)
    except (ValueError, TypeError):
        return body
    if not isinstance(decoded, bytes):
        return body
    scrubbed = _scrub(decoded, secrets)
    return body if scrubbed == decoded else codec.encode(scrubbed, encoding)


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
    """
    if getattr(flow, "_toolvocab_redacting", False):
        return
    cls = type(flow)

    def get_state() -> Any:
        return redact_state(cls.get_state(flow))

    def unredacted(method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            shadow = flow.__dict__.pop("get_state", None)
            try:
                return method(flow, *args, **kwargs)
            finally:
                if shadow is not None:
                    flow.get_state = shadow  # type: ignore[method-assign]

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
