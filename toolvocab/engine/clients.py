"""Which coding agent (or SDK) sent a request, from its headers.

Signals as captured from the clients' own requests (wire-formats §7 in ``docs/references.md``;
the e2e tests run the real agents): Claude Code ``User-Agent: claude-cli/<ver> (…)`` and ``x-app: cli``; Codex
``originator: codex_cli_rs`` / ``codex_exec`` / ``codex-tui`` and a UA starting with that
originator; OpenCode ``opencode/<ver>``; Qwen Code ``QwenCode/<ver>``; Gemini CLI
``GeminiCLI/<ver>`` (also ``GeminiCLI-tui/…``; from VS Code ``CloudCodeVSCode/<ver> (…;
proxy_client=geminicli)``, gemini-cli packages/core/src/core/contentGenerator.ts); the official SDKs' Stainless headers
(``x-stainless-lang``) and UAs (``Anthropic/Python``, ``OpenAI/Python``,
``google-genai-sdk/…`` in ``x-goog-api-client``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping

#: (client, header, regex) — first match wins; header names lower-case.
_RULES: tuple[tuple[str, str, str], ...] = (
    ("Claude Code", "user-agent", r"^claude-(?:cli|code)/"),
    ("Claude Code", "x-app", r"^cli$"),
    ("Codex", "originator", r"^codex"),
    ("Codex", "user-agent", r"^codex[_-]"),
    ("OpenCode", "user-agent", r"^opencode/"),
    ("Qwen Code", "user-agent", r"^QwenCode/"),
    ("Gemini CLI", "user-agent", r"^GeminiCLI"),
    ("Gemini CLI", "user-agent", r"^CloudCodeVSCode/.*\bproxy_client=geminicli\)"),  # run from VS Code
    ("anthropic SDK", "user-agent", r"^Anthropic/"),
    ("openai SDK", "user-agent", r"^(?:Async)?OpenAI/"),
    ("google-genai SDK", "x-goog-api-client", r"google-genai-sdk/"),
    ("curl", "user-agent", r"^curl/"),
)


#: The header names (lower-case) :func:`identify_client` reads.
HEADERS: tuple[str, ...] = tuple(dict.fromkeys(header for _, header, _ in _RULES))
#: :data:`_RULES` with each regex compiled once (``re.search`` with a pattern string looks it up
#: in ``re``'s cache at every call).
_COMPILED = tuple((client, header, re.compile(pattern)) for client, header, pattern in _RULES)


def client_headers(get: Callable[[str], str | None]) -> dict[str, str]:
    """The headers :func:`identify_client` reads, through ``get`` (a case-insensitive lookup such
    as mitmproxy's ``Headers.get``): one lookup per name instead of a walk over every header."""
    out = {}
    for name in HEADERS:
        value = get(name)
        if value is not None:
            out[name] = value
    return out


def identify_client(headers: Mapping[str, str]) -> str:
    """The client's name (``"Claude Code"``, ``"Codex"``, ``"OpenCode"``, ``"Qwen Code"``,
    ``"Gemini CLI"``, an SDK, ``"curl"``) or ``"unknown"``.

    ``headers`` maps header names (any case) to values. A mapping whose ``get`` ignores case
    (mitmproxy's ``Headers``) may be narrowed to :data:`HEADERS` first (:func:`client_headers`):
    the answer is the same.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    for client, header, pattern in _COMPILED:
        value = lower.get(header)
        if value and pattern.search(value):
            return client
    return "unknown"


#: What the agents write about the machine they run on, when it is Windows: Claude Code's
#: environment block (``Platform: win32``, ``OS Version: Windows …``), Gemini CLI's and Qwen
#: Code's ``My operating system is: win32``, Codex's ``<environment_context>`` (``<shell>powershell``
#: / ``pwsh`` / ``cmd``). Each names Node's ``process.platform`` or the shell Codex runs commands in.
_WINDOWS = re.compile(r"\bwin32\b|OS Version: Windows|<shell>\s*(?:powershell|pwsh|cmd)\b|Windows_NT", re.IGNORECASE)


#: Case-folded words one of which every :data:`_WINDOWS` match holds: a text without any is not
#: searched (``in`` is a C loop over the characters; the case-insensitive alternation costs a
#: Python ``re`` step per character, 0.3 ms over a 16 KB system prompt).
_WINDOWS_WORDS = ("win32", "windows", "<shell>")
#: The characters beyond ASCII that ``re.IGNORECASE`` takes for an ASCII letter and
#: ``str.casefold`` does not fold to that one letter (every such character below U+30000 but the
#: Kelvin sign, which folds to k: İ, dotless ı, long ſ).
_FOLD_TO_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})


#: Gemini CLI and Qwen Code name Node's ``process.platform`` in their User-Agent:
#: ``GeminiCLI/<version>/<model> (win32; x64)`` (google-gemini/gemini-cli,
#: packages/core/src/core/contentGenerator.ts) and ``QwenCode/<version> (win32; x64)``
#: (QwenLM/qwen-code, packages/core/src/core/openaiContentGenerator/provider/default.ts,
#: ``buildHeaders``). Their ``My operating system is: win32`` is in the session's first *user*
#: turn (gemini-cli packages/core/src/utils/environmentContext.ts), not in a system text. Run
#: from VS Code (its terminal, or launched by it) Gemini CLI writes instead
#: ``CloudCodeVSCode/<version> (aidev_client; os_type=Windows; os_version=…; arch=…; …)``
#: (the same contentGenerator.ts: ``win32`` mapped to ``Windows``).
#:
#: Codex names the OS in the comment right after its product token:
#: ``<originator>/<version> (<os type> <os version>; <arch>) <terminal>``, then an app-server
#: client's ``(<name>; <version>)`` when there is one (openai/codex,
#: codex-rs/login/src/auth/default_client.rs and earlier codex-rs/core/src/default_client.rs,
#: ``get_codex_user_agent``). The OS part is the ``os_info`` crate's ``os_type()`` and
#: ``version()``: ``Windows 10.0.26100`` (its ``Type::Windows`` displays as ``Windows``, the
#: version as ``major.minor.build``, or ``Unknown``), ``Mac OS 15.0.1``, ``Ubuntu 24.4.0``. The
#: originator is ``codex_cli_rs``, ``codex_vscode``, ``codex-tui``… or an override, so any
#: product token counts; only the *first* comment does, and only in that form: a later comment
#: (an app-server client named ``Windows …``), a product or terminal named ``Windows…``, or a
#: browser's ``(Windows NT 10.0; …)`` (whose commands need not run on that machine) say nothing.
#: The version token holds no ``/``: each ``/`` is tried once, so the search is linear.
_USER_AGENT_WINDOWS = re.compile(
    r"\(win32;|\(aidev_client; os_type=Windows;|^[^()]*/[^\s()/]+ \(Windows (?:\d+(?:\.\d+)*|Unknown);"
)


def user_agent_says_windows(user_agent: str | None) -> bool:
    """True when a ``User-Agent`` names Windows as Gemini CLI and Qwen Code do (``(win32; x64)``;
    Gemini CLI from VS Code ``(aidev_client; os_type=Windows; …)``) or as Codex does
    (``codex_cli_rs/0.171.0 (Windows 10.0.26100; x86_64) …``):
    :data:`_USER_AGENT_WINDOWS`. Only Windows counts; any other value, or none, says nothing."""
    return isinstance(user_agent, str) and _USER_AGENT_WINDOWS.search(user_agent) is not None


def announces_windows(texts: Iterable[str]) -> bool:
    """True when any of ``texts`` (a request's system prompt and environment context,
    :meth:`toolvocab.dialects.base.Dialect.platform_texts`) says the agent runs on Windows. There,
    each agent runs commands in its own shell (Claude Code in Git Bash, Codex and Gemini CLI in
    PowerShell, Qwen Code in cmd.exe or Git Bash): a command line never moves between tools."""
    for text in texts:
        if not isinstance(text, str):
            continue
        lower = text.translate(_FOLD_TO_ASCII).casefold()
        if any(word in lower for word in _WINDOWS_WORDS) and _WINDOWS.search(text):
            return True
    return False
