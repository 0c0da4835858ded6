"""Saved flows carry no credential, whatever state the flow ended in.

Flows in every state mitmproxy can save — an aborted request body (the client went away
mid-body: the request hook never ran), request and response trailers, an error, WebSocket
messages, a backup from an edit, header names in any case, ``?KEY=`` in capitals — are driven
through the addon's hooks and written with mitmproxy's own ``FlowWriter``; every byte of the file
is searched for each secret. The same flows' unredacted state is checked to hold the secrets
first, so the search means something. A real mitmdump with ``-w`` then saves a client that
disconnects mid-body and a request with ``?KEY=`` over a socket, and its file is searched too.
"""

from __future__ import annotations

import asyncio
import io
import socket
import time

import pytest
from mitmproxy import flow as mflow
from mitmproxy import http
from mitmproxy import io as mio
from mitmproxy import websocket
from mitmproxy.proxy.layers import http as hl
from mitmproxy.test import tflow

import flowreplay as fr

BEARER = b"sk-ant-bearer-0123456789abcdef"
API_KEY = b"sk-apikey-fedcba9876543210"
GOOG = b"AIzaSyGoogKey-0123456789"
QUERY = b"AIzaQueryKeyCaps-55555555"
TOKEN = b"access-token-77777777"
COOKIE = b"sessioncookie-99999999"
TRAILER = b"trailer-secret-31313131"
SECRETS = [BEARER, API_KEY, GOOG, QUERY, TOKEN, COOKIE, TRAILER]


def headers(*pairs: tuple[bytes, bytes]) -> http.Headers:
    return http.Headers([(k, v) for k, v in pairs])


def credential_headers() -> http.Headers:
    return headers(
        (b"Host", b"generativelanguage.googleapis.com"),
        (b"AUTHORIZATION", b"Bearer " + BEARER),
        (b"X-Api-Key", API_KEY),
        (b"x-GOOG-api-key", GOOG),
        (b"Cookie", b"sid=" + COOKIE + b"; theme=dark"),
        (b"content-type", b"application/json"),
    )


def flows_in_every_state() -> dict[str, mflow.Flow]:
    """name → a flow carrying every secret, in one of the states a flow can be saved in."""
    path = b"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&KEY=" + QUERY + b"&Access_Token=" + TOKEN
    out: dict[str, mflow.Flow] = {}

    aborted = tflow.tflow(resp=False)
    aborted.request.headers = credential_headers()
    aborted.request.path = path.decode()
    aborted.request.method = "POST"
    # the part of the body that arrived before the client went away echoes a key
    aborted.request.raw_content = b'{"contents": [{"parts": [{"text": "my key is ' + API_KEY + b'"'
    aborted.error = mflow.Error("client disconnected (before the body was complete)")
    out["aborted body"] = aborted

    trailers = tflow.tflow(resp=True)
    trailers.request.headers = credential_headers()
    trailers.request.path = path.decode()
    trailers.request.trailers = headers((b"Authorization", b"Bearer " + TRAILER))
    trailers.response.trailers = headers((b"SET-COOKIE", b"sid=" + COOKIE))
    out["trailers"] = trailers

    errored = tflow.tflow(resp=False)
    errored.request.headers = credential_headers()
    errored.request.path = path.decode()
    errored.error = mflow.Error(f"upstream refused https://example.test{path.decode()} with key {GOOG.decode()}")
    out["error"] = errored

    ws = tflow.twebsocketflow()
    ws.request.headers = credential_headers()
    ws.request.path = "/v1/responses?api_key=" + QUERY.decode()
    ws.websocket.messages.append(
        websocket.WebSocketMessage(1, True, b'{"type":"session.update","token":"' + BEARER + b'"}')
    )
    out["websocket messages"] = ws

    backup = tflow.tflow(resp=True)
    backup.request.headers = credential_headers()
    backup.request.path = path.decode()
    backup.backup()  # an edit in the UI keeps the state before it
    backup.request.headers["authorization"] = "Bearer edited"
    out["backup"] = backup
    return out


def saved_bytes(f: mflow.Flow) -> bytes:
    buf = io.BytesIO()
    mio.FlowWriter(buf).add(f)
    return buf.getvalue()


@pytest.fixture(scope="module")
def replayer():
    with fr.Replayer() as r:
        r.configure({"mode": "auto"})
        yield r


async def _drive(r: fr.Replayer, f: mflow.Flow, name: str) -> None:
    mgr = r.tctx.master.addons
    await mgr.invoke_addon(r.module, hl.HttpRequestHeadersHook(f))
    if name == "aborted body":
        await mgr.invoke_addon(r.module, hl.HttpErrorHook(f))  # no request hook: the body never completed
        return
    await mgr.invoke_addon(r.module, hl.HttpRequestHook(f))
    if f.error is not None:
        await mgr.invoke_addon(r.module, hl.HttpErrorHook(f))
    elif f.response is not None:
        await mgr.invoke_addon(r.module, hl.HttpResponseHeadersHook(f))
        await mgr.invoke_addon(r.module, hl.HttpResponseHook(f))


@pytest.mark.parametrize("name", list(flows_in_every_state()))
def test_a_saved_flow_holds_no_secret_in_any_state(replayer, name):
    f = flows_in_every_state()[name]
    unredacted = saved_bytes(f)
    present = [s for s in SECRETS if s in unredacted]
    assert len(present) >= 5, f"the {name} flow must carry the secrets before redaction: {present}"
    replayer._activate()
    asyncio.run(_drive(replayer, f, name))
    data = saved_bytes(f)
    leaked = [s.decode() for s in SECRETS if s in data or s.lower() in data.lower()]
    assert not leaked, f"{name}: saved flow leaks {leaked}"
    assert b"<redacted>" in data
    # the live flow keeps its credentials (the upstream still needs them)
    assert f.request.headers.get("authorization", "").endswith(BEARER.decode()) or name == "backup"
    back = list(mio.FlowReader(io.BytesIO(data)).stream())
    assert len(back) == 1 and back[0].id == f.id  # still a readable flow


def test_query_names_in_any_case_and_short_values_stay_readable(replayer):
    f = tflow.tflow(resp=True)
    f.request.path = "/v1beta/models/m:generateContent?Key=abc&API_KEY=" + QUERY.decode() + "&keep=1"
    replayer._activate()
    asyncio.run(_drive(replayer, f, "plain"))
    saved = list(mio.FlowReader(io.BytesIO(saved_bytes(f))).stream())[0]
    assert saved.request.path == "/v1beta/models/m:generateContent?Key=<redacted>&API_KEY=<redacted>&keep=1"


def _send_partial(port: int) -> None:
    body = b'{"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "key ' + API_KEY + b" and more"
    head = (
        b"POST /v1/messages?KEY=" + QUERY + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer " + BEARER + b"\r\nX-API-KEY: " + API_KEY + b"\r\n"
        b"content-type: application/json\r\ncontent-length: 100000\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(head + body)
        time.sleep(0.5)  # mitmdump has the headers and part of the body
    # closed: the client went away mid-body


@pytest.mark.integration
def test_mitmdump_saves_a_client_gone_mid_body_without_its_credentials(fake_upstream, proxy, tmp_path):
    """The ``-w`` file and a HAR written at exit (``hardump``) alike."""
    har_path = tmp_path / "flows.har"
    mitm = proxy(fake_upstream.url, options={"hardump": str(har_path)})
    _send_partial(mitm.port)
    deadline = time.monotonic() + 10
    while "client disconnect" not in mitm.output().lower() and time.monotonic() < deadline:
        time.sleep(0.1)
    flows = mitm.flows()  # stops mitmdump, which finishes writing -w
    assert flows, "mitmdump saved no flow for the aborted request\n" + mitm.output()
    assert any(f.error is not None for f in flows)
    with open(mitm.save_path, "rb") as fp:
        data = fp.read()
    leaked = [s.decode() for s in (BEARER, API_KEY, QUERY) if s in data]
    assert not leaked, f"saved flows leak {leaked}"
    assert b"<redacted>" in data
    har = har_path.read_bytes()
    leaked = [s.decode() for s in (BEARER, API_KEY, QUERY) if s in har]
    assert not leaked, f"the HAR leaks {leaked}"
    assert b"<redacted>" in har and b"/v1/messages" in har


@pytest.mark.parametrize("name", [n for n in flows_in_every_state() if n != "websocket messages"])
def test_a_har_export_holds_no_secret(replayer, name):
    """mitmproxy's HAR writer (``hardump``, ``save.har``) reads headers, cookies, the query and
    the body off the live flow, not through ``get_state``: what it writes is redacted too."""
    from mitmproxy.addons.savehar import SaveHar

    f = flows_in_every_state()[name]
    plain = SaveHar().make_har([f])
    assert len([s for s in SECRETS if s.decode() in str(plain)]) >= 3, "the HAR must carry secrets unredacted"
    replayer._activate()
    asyncio.run(_drive(replayer, f, name))
    savehar = replayer.tctx.master.addons.get("savehar") or SaveHar()
    from toolvocab.addons.redaction import redact_har

    redact_har(savehar)  # what the addon's configure does with the master's savehar
    har = str(savehar.make_har([f]))
    leaked = [s.decode() for s in SECRETS if s.decode() in har or s.decode().lower() in har.lower()]
    assert not leaked, f"{name}: the HAR leaks {leaked}"
    assert "<redacted>" in har and f.request.method in har
    assert f.request.headers.get("authorization", "").endswith(BEARER.decode()) or name == "backup"


def test_backup_revert_and_duplicate_keep_the_live_credentials(replayer):
    """An edit or a client replay backs the flow up (``Flow.backup``), Revert restores that, and
    Duplicate copies the flow (``Flow.copy``): each from the real state, so the next replay
    sends the real key. Saving any of them still writes no secret."""
    f = tflow.tflow(resp=True)
    f.request.headers = credential_headers()
    replayer._activate()
    asyncio.run(_drive(replayer, f, "plain"))
    f.backup()
    f.request.headers["x-api-key"] = "edited"
    backed_up = saved_bytes(f)
    f.revert()
    assert f.request.headers["x-api-key"] == API_KEY.decode()
    assert f.request.headers["authorization"] == "Bearer " + BEARER.decode()
    duplicate = f.copy()
    assert duplicate.request.headers["x-api-key"] == API_KEY.decode() and duplicate.id != f.id
    for data in (backed_up, saved_bytes(f), saved_bytes(duplicate)):
        leaked = [s.decode() for s in SECRETS if s in data]
        assert not leaked and b"<redacted>" in data, leaked


def _saved(f: mflow.Flow) -> mflow.Flow:
    return list(mio.FlowReader(io.BytesIO(saved_bytes(f))).stream())[0]


def test_the_proxyauth_password_is_not_saved(replayer):
    """mitmproxy's ``proxyauth`` takes the ``Proxy-Authorization`` header off the request and
    keeps ``(user, password)`` in ``flow.metadata["proxyauth"]`` (mitmproxy
    ``addons/proxyauth.py``): the saved flow keeps the user, not the password, anywhere."""
    password = "S3cretProxyPass99"
    f = tflow.tflow(resp=True)
    f.request.headers = credential_headers()
    f.metadata["proxyauth"] = ("alice", password)
    f.request.content = b'{"note": "the proxy password is ' + password.encode() + b'"}'
    replayer._activate()
    asyncio.run(_drive(replayer, f, "plain"))
    data = saved_bytes(f)
    assert password.encode() not in data
    assert tuple(_saved(f).metadata["proxyauth"]) == ("alice", "<redacted>")
    assert f.metadata["proxyauth"] == ("alice", password)  # the live flow keeps it


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_a_key_echoed_in_a_compressed_body_is_redacted_in_the_decoded_body(replayer, encoding):
    """A transcript that printed the key (``cat .env``) in a compressed request, and an error
    answer echoing it compressed: searched in the decoded bytes, written encoded again."""
    f = tflow.tflow(resp=True)
    f.request.headers = credential_headers()
    f.request.headers["content-encoding"] = encoding
    f.request.content = b'{"messages": [{"role": "user", "content": "ANTHROPIC_API_KEY=' + API_KEY + b'"}]}'
    f.response.headers["content-encoding"] = encoding
    f.response.content = b'{"error": {"message": "invalid key ' + GOOG + b'"}}'
    assert f.request.raw_content != f.request.get_content()  # encoded
    replayer._activate()
    asyncio.run(_drive(replayer, f, "plain"))
    saved = _saved(f)
    assert saved.request.headers["content-encoding"] == encoding
    assert saved.request.get_content() == b'{"messages": [{"role": "user", "content": "ANTHROPIC_API_KEY=<redacted>"}]}'
    assert saved.response.get_content() == b'{"error": {"message": "invalid key <redacted>"}}'
    assert API_KEY in f.request.get_content()  # the live flow keeps it


@pytest.mark.parametrize(
    "header",
    [
        "Ocp-Apim-Subscription-Key",  # Azure API Management
        "cf-aig-authorization",  # Cloudflare AI Gateway
        "x-portkey-api-key",
        "x-litellm-api-key",
        "Helicone-Auth",
        "apikey",
        "api_key",
        "x-amz-security-token",
        "X-Auth-Token",
    ],
)
def test_gateway_credential_headers_are_redacted(replayer, header):
    f = tflow.tflow(resp=True)
    f.request.headers[header] = "Bearer " + BEARER.decode()
    replayer._activate()
    asyncio.run(_drive(replayer, f, "plain"))
    data = saved_bytes(f)
    assert BEARER not in data
    assert _saved(f).request.headers[header] == "<redacted>"


@pytest.mark.parametrize(
    "param",
    [
        "token",
        "subscription-key",
        "auth",
        "access-token",
        "x-goog-api-key",
        "%6Bey",
        "api%5Fkey",
        "sig",
        # a presigned URL's signature sends the request for whoever holds it, until it expires
        "X-Amz-Signature",
        "x-goog-signature",
    ],
)
def test_credential_query_parameters_are_redacted_whatever_their_spelling(replayer, param):
    f = tflow.tflow(resp=True)
    f.request.path = f"/v1/messages?beta=true&{param}={QUERY.decode()}&n=1"
    replayer._activate()
    asyncio.run(_drive(replayer, f, "plain"))
    assert QUERY not in saved_bytes(f)
    assert _saved(f).request.path == f"/v1/messages?beta=true&{param}=<redacted>&n=1"


def test_set_cookie_attributes_are_no_secrets_and_other_headers_stay():
    """Only a cookie's value is a credential: a ``Set-Cookie`` ``Domain`` or ``Expires`` scrubbed
    as one would cut the host and dates out of the whole saved flow. Headers with no credential
    in their name (rate limits counting tokens, ``WWW-Authenticate``) stay as they are."""
    from toolvocab.addons.redaction import redact_state

    f = tflow.tflow(resp=True)
    f.request.host = "api.openai.com"
    f.request.headers["host"] = "api.openai.com"
    f.response.headers["set-cookie"] = (
        "__cf_bm=" + COOKIE.decode() + "; path=/; expires=Sat, 05-Dec-26 07:00:00 GMT; domain=.api.openai.com; HttpOnly"
    )
    f.response.headers["x-ratelimit-remaining-tokens"] = "799000"
    f.response.headers["www-authenticate"] = 'Bearer realm="api.openai.com"'
    f.response.content = b'{"note": "from api.openai.com on Sat, 05-Dec-26 07:00:00 GMT"}'
    state = redact_state(f.get_state())
    back = http.HTTPFlow.from_state(state)
    assert back.request.host == "api.openai.com" and back.request.headers["host"] == "api.openai.com"
    assert back.response.content == f.response.content
    assert back.response.headers["set-cookie"] == "<redacted>"
    assert back.response.headers["x-ratelimit-remaining-tokens"] == "799000"
    assert back.response.headers["www-authenticate"] == 'Bearer realm="api.openai.com"'
    assert COOKIE not in str(state).encode()


@pytest.mark.parametrize(
    "header",
    [
        "access-control-allow-credentials",
        "x-amzn-bedrock-input-token-count",
        "x-amzn-bedrock-output-token-count",
        "anthropic-ratelimit-tokens-remaining",
        "x-ratelimit-limit-tokens",
        "www-authenticate",
        "anthropic-version",
    ],
)
def test_headers_that_only_talk_about_credentials_or_tokens_stay(header):
    from toolvocab.addons.redaction import is_credential_header

    assert not is_credential_header(header)


@pytest.mark.parametrize("cut", [1, 7, 13, 20])
def test_a_key_cut_across_websocket_frames_is_redacted(replayer, cut):
    """Codex's Responses socket streams a call's arguments as ``function_call_arguments.delta``
    frames: a key the model writes out, cut between two frames, leaves no piece in the saved
    flow that spells it when the frames' deltas are joined."""
    import orjson

    key = BEARER.decode()
    args = f'{{"cmd":"echo {key} > .env"}}'
    at = args.index(key) + cut
    f = tflow.twebsocketflow()
    f.request.headers = credential_headers()
    f.websocket.messages = [
        websocket.WebSocketMessage(1, True, b'{"type":"response.create"}'),
        *[
            websocket.WebSocketMessage(
                1,
                False,
                orjson.dumps({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": piece}),
            )
            for piece in (args[:at], args[at:])
        ],
    ]
    replayer._activate()
    asyncio.run(_drive(replayer, f, "plain"))
    saved = list(mio.FlowReader(io.BytesIO(saved_bytes(f))).stream())[0]
    joined = "".join(orjson.loads(m.content)["delta"] for m in saved.websocket.messages if not m.from_client)
    assert joined == '{"cmd":"echo <redacted> > .env"}'
    assert BEARER not in saved_bytes(f)
    assert [m.content for m in f.websocket.messages][1:] != [m.content for m in saved.websocket.messages][1:]


@pytest.mark.parametrize("param", ["use_sig", "signature_version", "sig_alg"])
def test_query_settings_named_like_signatures_stay_readable(replayer, param):
    """Only a parameter that is a signature (``sig``, a name ending in ``signature``) is one: a
    flag or a version named after one is a setting, and stays readable in the saved flow."""
    f = tflow.tflow(resp=True)
    f.request.path = f"/v1/messages?{param}=4&n=1"
    replayer._activate()
    asyncio.run(_drive(replayer, f, "plain"))
    assert _saved(f).request.path == f"/v1/messages?{param}=4&n=1"
