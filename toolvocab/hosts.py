"""Which connections toolvocab intercepts in mitmproxy's regular (forward) mode.

With no ``--mode``, mitmdump is an HTTP(S) proxy: every client connection arrives as a
``CONNECT host:port`` and, for HTTPS, a TLS ClientHello. toolvocab intercepts TLS only to the
known LLM API hosts below (or to the hosts ``toolvocab_hosts`` names) and lets every other
connection pass as an untouched tunnel, so the mitmproxy CA is trusted for nothing else and
pinned or unrelated hosts keep working. Pure functions; no mitmproxy import (the addon's
``tls_clienthello`` hook calls :func:`HostRule.intercepts`).

Every row of :data:`KNOWN_HOSTS` names where the host comes from. Only hosts that speak one of
the four wire formats the dialects read are listed (Anthropic Messages, OpenAI Chat
Completions, OpenAI Responses, Gemini ``generateContent``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownHost:
    """One known LLM API host.

    ``pattern``: a regex matched with ``re.fullmatch`` (case-insensitive) against the host name
    (SNI or CONNECT host, no port); ``dialects``: the wire formats served there; ``provider``:
    who runs it; ``source``: where the host name was read (SDK default base URL, agent source).
    """

    pattern: str
    dialects: tuple[str, ...]
    provider: str
    source: str


_CHAT = ("openai_chat",)
_OPENAI = ("openai_chat", "openai_responses")

#: Known LLM API hosts, by provider. Sources are the official SDKs' default base URLs and the
#: agents' own code (the versions pinned in tests/e2e/install_clients.sh).
KNOWN_HOSTS: tuple[KnownHost, ...] = (
    # --- Anthropic Messages
    KnownHost(
        r"api\.anthropic\.com",
        ("anthropic",),
        "Anthropic",
        "anthropic SDK default base_url https://api.anthropic.com; Claude Code's default",
    ),
    # --- OpenAI Chat Completions / Responses
    KnownHost(
        r"api\.openai\.com",
        _OPENAI,
        "OpenAI",
        "openai SDK default base_url https://api.openai.com/v1; Codex with an API key",
    ),
    KnownHost(
        r"chatgpt\.com",
        ("openai_responses",),
        "OpenAI (ChatGPT login)",
        "Codex with ChatGPT login: https://chatgpt.com/backend-api/codex (codex-rs model provider)",
    ),
    KnownHost(
        r"[a-z0-9-]+\.openai\.azure\.com",
        _OPENAI,
        "Azure OpenAI",
        "openai SDK AzureOpenAI: https://{resource}.openai.azure.com",
    ),
    # --- Gemini (generateContent) and Vertex AI (Gemini and Anthropic publishers)
    KnownHost(
        r"generativelanguage\.googleapis\.com",
        ("gemini",),
        "Google Gemini API",
        "google-genai SDK default; Gemini CLI with GEMINI_API_KEY",
    ),
    KnownHost(
        r"(?:[a-z0-9-]+-)?aiplatform\.googleapis\.com",
        ("gemini", "anthropic"),
        "Google Vertex AI",
        "google-genai SDK (vertexai=True): https://{location}-aiplatform.googleapis.com, "
        "global https://aiplatform.googleapis.com; anthropic SDK AnthropicVertex",
    ),
    KnownHost(
        r"cloudcode-pa\.googleapis\.com",
        ("gemini",),
        "Google Code Assist",
        "Gemini CLI CODE_ASSIST_ENDPOINT https://cloudcode-pa.googleapis.com (login with Google)",
    ),
    # --- OpenAI-compatible providers
    KnownHost(
        r"openrouter\.ai",
        ("openai_chat", "openai_responses", "anthropic"),
        "OpenRouter",
        "https://openrouter.ai/api/v1 (OpenCode and Qwen Code provider lists)",
    ),
    KnownHost(
        r"api\.deepseek\.com",
        ("openai_chat", "anthropic"),
        "DeepSeek",
        "https://api.deepseek.com (Qwen Code provider list); /anthropic speaks Messages",
    ),
    KnownHost(
        r"api\.moonshot\.(?:ai|cn)",
        ("openai_chat", "anthropic"),
        "Moonshot (Kimi)",
        "https://api.moonshot.ai/v1 and api.moonshot.cn (toolvocab/engine/grammar.py)",
    ),
    KnownHost(
        r"(?:[a-z0-9-]+\.)?dashscope(?:-intl|-us)?\.aliyuncs\.com",
        _CHAT,
        "Alibaba DashScope (Qwen)",
        "Qwen Code: https://dashscope.aliyuncs.com/compatible-mode/v1, dashscope-intl, dashscope-us",
    ),
    KnownHost(r"api\.z\.ai", ("openai_chat", "anthropic"), "Z.ai (GLM)", "Qwen Code provider list"),
    KnownHost(r"api\.x\.ai", _OPENAI, "xAI", "OpenCode provider list: https://api.x.ai/v1"),
    KnownHost(r"api\.groq\.com", _CHAT, "Groq", "OpenCode provider list: https://api.groq.com/openai/v1"),
    KnownHost(r"api\.cerebras\.ai", _CHAT, "Cerebras", "OpenCode provider list: https://api.cerebras.ai/v1"),
    KnownHost(r"api\.together\.xyz", _CHAT, "Together AI", "OpenCode provider list: https://api.together.xyz/v1"),
    KnownHost(r"api\.mistral\.ai", _CHAT, "Mistral", "Qwen Code provider list: https://api.mistral.ai/v1"),
    KnownHost(
        r"opencode\.ai",
        ("openai_chat", "openai_responses", "anthropic"),
        "OpenCode Zen",
        "OpenCode: https://opencode.ai/zen (an access gate: profiles never apply there)",
    ),
)

INTERCEPT_CHOICES = ("known", "all")


def default_pattern() -> str:
    """One regex (for ``re.fullmatch``, case-insensitive) matching every known host."""
    return "(?:" + "|".join(h.pattern for h in KNOWN_HOSTS) + ")"


_DEFAULT = re.compile(default_pattern(), re.IGNORECASE)


def known_host(host: str) -> KnownHost | None:
    """The :data:`KNOWN_HOSTS` row for ``host`` (a name, no port; case-insensitive), or None."""
    host = _bare(host)
    for row in KNOWN_HOSTS:
        if re.fullmatch(row.pattern, host, re.IGNORECASE):
            return row
    return None


def _bare(host: str) -> str:
    """``host`` lowercased, without a trailing dot or ``:port`` (IPv6 brackets kept off)."""
    host = (host or "").strip().lower().rstrip(".")
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host


@dataclass(frozen=True)
class HostRule:
    """Which TLS connections to intercept in regular mode.

    ``hosts``: the compiled ``toolvocab_hosts`` regex (``re.search`` on the host), or None for
    the known-hosts table; ``intercept_all``: intercept every connection (mitmproxy's own
    default behaviour).
    """

    hosts: re.Pattern[str] | None = None
    intercept_all: bool = False

    def intercepts(self, host: str | None) -> bool:
        """True when a TLS connection to ``host`` (SNI or CONNECT host; ``:port`` allowed)
        should be intercepted. A connection with no host name at all is intercepted only when
        everything is."""
        if self.intercept_all:
            return True
        if not host:
            return False
        bare = _bare(host)
        if self.hosts is not None:
            return self.hosts.search(bare) is not None
        return _DEFAULT.fullmatch(bare) is not None

    def describe(self) -> str:
        """One phrase for the start-up log line."""
        if self.intercept_all:
            return "intercepting TLS to every host (toolvocab_intercept=all)"
        if self.hosts is not None:
            # as the user wrote it (a repr would double every backslash)
            return f"intercepting TLS only to hosts matching toolvocab_hosts={self.hosts.pattern}"
        return f"intercepting TLS only to {len(KNOWN_HOSTS)} known LLM API hosts; every other connection is tunnelled untouched"


def connection_host(sni: str | None, address: tuple | None) -> str | None:
    """The host a TLS connection is for: the ClientHello's SNI, else the CONNECT target's host
    (``context.server.address``), else None."""
    if sni:
        return sni
    if address:
        return str(address[0])
    return None


def start_line(modes: list[str] | tuple[str, ...], toolvocab_mode: str, profiles: str | None, rule: HostRule) -> str:
    """The one line the addon logs when mitmproxy is running, e.g. ``toolvocab: mode auto ·
    proxy regular · profiles none · intercepting TLS only to 18 known LLM API hosts; …``.

    ``modes``: mitmproxy's ``mode`` option (``["regular"]``, ``["reverse:https://…"]``…).
    The host rule is told for the non-reverse modes only (reverse mode never tunnels).
    """
    modes = list(modes) or ["regular"]
    forward = [m for m in modes if not m.startswith("reverse:")]
    parts = [f"toolvocab: mode {toolvocab_mode}", "proxy " + ", ".join(modes), f"profiles {profiles or 'none'}"]
    if forward:
        parts.append(rule.describe())
    if rule.hosts is not None and len(forward) < len(modes):
        parts.append(f"reverse mode handles hosts matching {rule.hosts.pattern}")
    return " · ".join(parts)
