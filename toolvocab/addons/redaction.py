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
                "true or false. Redact credentials (Authorization, x-api-key, x-goog-api-key, api-key, cookies, "
                "key= query parameters) from every flow whenever it is saved (-w, save commands, toolvocab_record). "
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

    Headers and trailers ``authorization``, ``proxy-authorization``, ``x-api-key``,
    ``x-goog-api-key``, ``api-key``, ``cookie`` and ``set-cookie`` (names in any case), and
    query parameters ``key``, ``api_key``, ``api-key``, ``apikey``, ``access_token`` (any case:
    ``?KEY=``) in the path. Each credential value found there (and, for ``Bearer``/``Basic``
    and the like, the token after the scheme) of 8 bytes or more is then replaced wherever else
    it occurs in the state: bodies (also a partial body of an aborted request), metadata,
    WebSocket messages, the error message. ``state`` is mitmproxy's ``Flow.get_state()`` dict
    (headers as ``(name, value)`` byte pairs); the input is not modified.
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
        for match in _KEY_PARAM.finditer(request["path"]):
            secrets.add(match.group(2))
        request["path"] = _KEY_PARAM.sub(rb"\1<redacted>", request["path"])
    if isinstance(out.get("backup"), dict):  # the state before an edit in the UI
        out["backup"] = redact_state(out["backup"])
    long_secrets = sorted((s for s in secrets if len(s) >= 8), key=len, reverse=True)
    if long_secrets:
        out = _scrub(out, long_secrets)
    return out


_REDACT_NAMES = frozenset(
    {b"authorization", b"proxy-authorization", b"x-api-key", b"x-goog-api-key", b"api-key", b"cookie", b"set-cookie"}
)
_KEY_PARAM = re.compile(rb"([?&;](?:key|api_key|api-key|apikey|access_token)=)([^&#;]*)", re.IGNORECASE)
_AUTH_SCHEME = re.compile(rb"^\s*[A-Za-z][A-Za-z0-9_-]*\s+(\S+)\s*$")


def _redact_fields(fields: Any, secrets: set[bytes]) -> list[Any]:
    """Header or trailer ``(name, value)`` pairs with credential values redacted; the values
    (and a scheme's token) are added to ``secrets``."""
    out = []
    for pair in fields:
        try:
            name, value = pair
        except (TypeError, ValueError):
            out.append(pair)
            continue
        key = name.encode("latin-1", "replace") if isinstance(name, str) else name
        if isinstance(key, bytes) and key.strip().lower() in _REDACT_NAMES:
            raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
            if isinstance(raw, bytes):
                secrets.add(raw.strip())
                scheme = _AUTH_SCHEME.match(raw)
                if scheme:
                    secrets.add(scheme.group(1))
                for cookie in raw.split(b";"):
                    secrets.add(cookie.partition(b"=")[2].strip())
            value = b"<redacted>" if isinstance(value, bytes) else "<redacted>"
        out.append((name, value))
    return out


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
