"""Which client sent a request (:func:`identify_client`), read from all headers or only from the
few it needs (:func:`client_headers`, what the request hook passes: issue 11)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from mitmproxy import http

from toolvocab.engine.clients import client_headers
from toolvocab.engine.clients import identify_client

VALUES = st.sampled_from([
    "claude-cli/2.0.1 (external, cli)", "cli", "codex_cli_rs", "codex-tui/0.5", "opencode/1.0.3", "QwenCode/0.1",
    "GeminiCLI/0.9 (linux)", "GeminiCLI-tui/1", "Anthropic/Python 0.125.0", "OpenAI/Python 2.54.0", "AsyncOpenAI/Python 2",
    "google-genai-sdk/1.2 gl-python/3.11", "curl/8.5.0", "Mozilla/5.0", "", "codex",
])
NAMES = st.sampled_from(["user-agent", "x-app", "originator", "x-goog-api-client", "accept", "x-stainless-lang", "content-type", "authorization"])


def _case(draw_name: str, flips: list[bool]) -> str:
    return "".join(c.upper() if flip else c for c, flip in zip(draw_name, flips + [False] * len(draw_name)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAMES, st.lists(st.booleans(), max_size=20), VALUES), max_size=6))
def test_the_few_headers_name_the_client_all_headers_name(pairs) -> None:
    """Header names in any case, repeated or not, among others: reading only :data:`HEADERS`
    through mitmproxy's case-insensitive ``Headers.get`` names the same client as reading every
    header of the same ``Headers`` (a repeated header's values joined, as mitmproxy reads them)."""
    fields = [(_case(name, flips).encode(), value.encode()) for name, flips, value in pairs]
    headers = http.Headers(fields)
    assert identify_client(client_headers(headers.get)) == identify_client(headers)


def test_known_clients_are_named() -> None:
    assert identify_client(client_headers(http.Headers(**{"User-Agent": "claude-cli/2.0.1 (external, cli)"}).get)) == "Claude Code"
    assert identify_client(client_headers(http.Headers(originator="codex_cli_rs").get)) == "Codex"
    assert identify_client(client_headers(http.Headers(accept="*/*").get)) == "unknown"
