"""Which client sent a request (:func:`identify_client`), read from all headers or only from the
few it needs (:func:`client_headers`, what the request hook passes)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from mitmproxy import http

from toolvocab.engine.clients import client_headers
from toolvocab.engine.clients import identify_client

VALUES = st.sampled_from(
    [
        "claude-cli/2.0.1 (external, cli)",
        "cli",
        "codex_cli_rs",
        "codex-tui/0.5",
        "opencode/1.0.3",
        "QwenCode/0.1",
        "GeminiCLI/0.9 (linux)",
        "GeminiCLI-tui/1",
        "Anthropic/Python 0.125.0",
        "OpenAI/Python 2.54.0",
        "AsyncOpenAI/Python 2",
        "google-genai-sdk/1.2 gl-python/3.11",
        "curl/8.5.0",
        "Mozilla/5.0",
        "",
        "codex",
    ]
)
NAMES = st.sampled_from(
    [
        "user-agent",
        "x-app",
        "originator",
        "x-goog-api-client",
        "accept",
        "x-stainless-lang",
        "content-type",
        "authorization",
    ]
)


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
    assert (
        identify_client(client_headers(http.Headers(**{"User-Agent": "claude-cli/2.0.1 (external, cli)"}).get))
        == "Claude Code"
    )
    assert identify_client(client_headers(http.Headers(originator="codex_cli_rs").get)) == "Codex"
    assert identify_client(client_headers(http.Headers(accept="*/*").get)) == "unknown"
    vscode = (
        "CloudCodeVSCode/0.40.0 (aidev_client; os_type=Windows; os_version=10.0.26100; arch=x64; "
        "host_path=VSCode/1.99.0; proxy_client=geminicli)"
    )
    assert identify_client(client_headers(http.Headers(**{"User-Agent": vscode}).get)) == "Gemini CLI"


# -- Windows, read fast --------------------------------------------------------------------------

_WIN_CHARS = st.sampled_from(
    list("winWIN32dowsDOWS<>shel lpowershcmdt_NTOS:VersiorVERSION")
    + ["\u0130", "\u0131", "\u017f", "\u212a", "\ufb05", "\uff37", "\u2170", "\u00df"]
)
_WIN_WORDS = st.sampled_from(
    [
        "win32",
        "Windows",
        "WINDOWS_NT",
        "<shell>",
        "<shell> pwsh",
        "OS Version: Windows",
        "powershell",
        "w\u0131n32",
        "w\u0130n32",
        "OS Ver\u017fion: Window\u017f",
        "window\u017f_nt",
        "<\u017fhell>cmd",
    ]
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(_WIN_CHARS | _WIN_WORDS, max_size=12).map("".join))
def test_the_windows_words_look_is_the_case_insensitive_search(text: str) -> None:
    """``announces_windows`` searches only a text holding one of its words, case-folded as
    ``re.IGNORECASE`` folds (dotless ı, İ, long ſ among them): it says what the search says."""
    from toolvocab.engine.clients import _WINDOWS
    from toolvocab.engine.clients import announces_windows

    assert announces_windows([text]) is bool(_WINDOWS.search(text))


# -- Windows, said in a User-Agent ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("user_agent", "windows"),
    [
        # Codex: <originator>/<version> (<os_info type> <version>; <arch>) <terminal> [(<client>; <ver>)]
        # (openai/codex codex-rs/login/src/auth/default_client.rs, get_codex_user_agent)
        ("codex_cli_rs/0.171.0 (Windows 10.0.26100; x86_64) WindowsTerminal", True),
        ("codex_vscode/0.171.0 (Windows 10.0.22631; arm64) vscode/1.99.0 (codex-vscode; 0.4.0)", True),
        ("codex_cli_rs/0.171.0 (Windows Unknown; x86_64) unknown", True),
        ("Codex Desktop/0.171.0 (Windows 10.0.26100; x86_64) unknown", True),
        ("codex_cli_rs/0.171.0 (Mac OS 15.0.1; arm64) iTerm.app/3.5.0", False),
        ("codex_cli_rs/0.171.0 (Ubuntu 24.4.0; x86_64) xterm-256color", False),
        # the word elsewhere: a terminal, a product, a later comment, a browser's OS
        ("codex_cli_rs/0.171.0 (Mac OS 15.0.1; arm64) WindowsTerminal", False),
        ("WindowsAgent/1.0 (Linux 6.1; x86_64)", False),
        ("codex_cli_rs/0.171.0 (Ubuntu 24.4.0; x86_64) vscode/1.99.0 (Windows Copilot; 1.2)", False),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36", False),
        # Gemini CLI and Qwen Code: Node's process.platform
        ("GeminiCLI/0.1.0/gemini-2.5-pro (win32; x64)", True),
        ("QwenCode/0.15.10 (linux; x64)", False),
        # Gemini CLI from VS Code (google-gemini/gemini-cli packages/core/src/core/contentGenerator.ts)
        (
            "CloudCodeVSCode/0.40.0 (aidev_client; os_type=Windows; os_version=10.0.26100; arch=x64; "
            "host_path=VSCode/1.99.0; proxy_client=geminicli)",
            True,
        ),
        (
            "CloudCodeVSCode/0.40.0 (aidev_client; os_type=macOS; os_version=24.0.0; arch=arm64; "
            "host_path=VSCode/1.99.0; proxy_client=geminicli)",
            False,
        ),
        (None, False),
    ],
)
def test_a_user_agent_says_windows_only_in_its_os_part(user_agent: str | None, windows: bool) -> None:
    """Codex names Windows as ``os_info`` writes it, in the comment after its product token;
    the word anywhere else says nothing."""
    from toolvocab.engine.clients import user_agent_says_windows

    assert user_agent_says_windows(user_agent) is windows


def test_a_long_user_agent_is_read_in_linear_time() -> None:
    """Many ``/`` and no Windows comment: each is tried once (no quadratic backtracking)."""
    import time

    from toolvocab.engine.clients import user_agent_says_windows

    start = time.perf_counter()
    for ua in ("a/" * 50_000, "x/1 " * 30_000, "a/" * 30_000 + "b (Windows x"):
        assert user_agent_says_windows(ua) is False
    assert time.perf_counter() - start < 1.0
