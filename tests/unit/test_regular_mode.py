"""Regular (forward) mode: which TLS connections toolvocab intercepts (toolvocab/hosts.py and the
addon's ``tls_clienthello`` hook, driven with a real ClientHello parsed by mitmproxy)."""

from __future__ import annotations

import re
import ssl

import pytest
from mitmproxy import exceptions
from mitmproxy.connection import Client
from mitmproxy.options import Options
from mitmproxy.proxy.context import Context
from mitmproxy.proxy.layers.tls import parse_client_hello
from mitmproxy.proxy.mode_specs import ProxyMode
from mitmproxy.tls import ClientHelloData

import harness
import toolvocab.hosts as tvhosts

#: Hosts the agents use by default (tests/e2e/test_forward_mode_agents.py drives them) and a few
#: provider hosts; each must be intercepted with the default rule.
LLM_HOSTS = [
    "api.anthropic.com",
    "api.openai.com",
    "chatgpt.com",
    "generativelanguage.googleapis.com",
    "us-central1-aiplatform.googleapis.com",
    "aiplatform.googleapis.com",
    "cloudcode-pa.googleapis.com",
    "openrouter.ai",
    "api.deepseek.com",
    "dashscope-intl.aliyuncs.com",
    "myres.openai.azure.com",
    "API.Anthropic.COM",
    "api.anthropic.com.",
    "api.anthropic.com:443",
]
#: Hosts that must pass untouched: unrelated, look-alikes and suffix tricks.
OTHER_HOSTS = [
    "github.com",
    "registry.npmjs.org",
    "www.googleapis.com",
    "oauth2.googleapis.com",
    "storage.googleapis.com",
    "api.anthropic.com.evil.example",
    "evilapi.anthropic.com",
    "notchatgpt.com",
    "chatgpt.com.example",
    "api.openai.com.attacker.net",
    "auth.openai.com",
    "example.test",
    "127.0.0.1",
]


@pytest.mark.parametrize("host", LLM_HOSTS)
def test_default_rule_intercepts_known_llm_hosts(host: str) -> None:
    assert tvhosts.HostRule().intercepts(host)
    assert tvhosts.known_host(host) is not None


@pytest.mark.parametrize("host", OTHER_HOSTS)
def test_default_rule_tunnels_everything_else(host: str) -> None:
    assert not tvhosts.HostRule().intercepts(host)
    assert tvhosts.known_host(host) is None


def test_every_row_is_sourced_and_compiles() -> None:
    dialects = {"anthropic", "openai_chat", "openai_responses", "gemini"}
    for row in tvhosts.KNOWN_HOSTS:
        re.compile(row.pattern)
        assert row.source and row.provider
        assert set(row.dialects) <= dialects, row


def test_hosts_option_replaces_the_table_and_all_intercepts_everything() -> None:
    rule = tvhosts.HostRule(hosts=re.compile(r"llm\.internal$"))
    assert rule.intercepts("gw.llm.internal")
    assert not rule.intercepts("api.anthropic.com")
    everything = tvhosts.HostRule(intercept_all=True)
    assert everything.intercepts("github.com") and everything.intercepts(None)
    assert not tvhosts.HostRule().intercepts(None)


def test_connection_host_prefers_sni() -> None:
    assert tvhosts.connection_host("api.openai.com", ("1.2.3.4", 443)) == "api.openai.com"
    assert tvhosts.connection_host(None, ("api.openai.com", 443)) == "api.openai.com"
    assert tvhosts.connection_host(None, None) is None


# -- the hook, as mitmproxy calls it -------------------------------------------------------------


def client_hello_bytes(sni: str | None) -> bytes:
    """A real TLS ClientHello record from Python's ssl (with ``sni`` as server_hostname)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=sni)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return outgoing.read()


def hello_data(mode: str, sni: str | None, connect_host: str | None = None) -> ClientHelloData:
    client = Client(
        peername=("127.0.0.1", 50000), sockname=("127.0.0.1", 8080), timestamp_start=0, proxy_mode=ProxyMode.parse(mode)
    )
    context = Context(client, Options())
    if connect_host:
        context.server.address = (connect_host, 443)
    hello = parse_client_hello(client_hello_bytes(sni))
    assert hello is not None and hello.sni == sni
    return ClientHelloData(context, hello)


@pytest.fixture(scope="module")
def tv():
    with harness.script_context() as pair:  # in the addon chain, so option changes reach configure()
        yield pair


@pytest.fixture(autouse=True)
def _point_ctx(request):
    """Another test module may have created a Master since: point ctx back at ours."""
    if "tv" in request.fixturenames:
        harness.activate(request.getfixturevalue("tv")[0])


def addon_of(script):
    return harness.intercept(script)


@pytest.mark.parametrize(
    "sni,intercepted",
    [("api.anthropic.com", True), ("github.com", False), ("chatgpt.com", True), ("example.test", False)],
)
def test_hook_ignores_only_unknown_hosts_in_regular_mode(tv, sni: str, intercepted: bool) -> None:
    tctx, script = tv
    tctx.configure(script, toolvocab_hosts=None, toolvocab_intercept="known")
    data = hello_data("regular", sni, connect_host=sni)
    addon_of(script).tls_clienthello(data)
    assert data.ignore_connection is (not intercepted)


def test_hook_uses_connect_host_without_sni(tv) -> None:
    tctx, script = tv
    tctx.configure(script, toolvocab_hosts=None, toolvocab_intercept="known")
    data = hello_data("regular", None, connect_host="api.openai.com")
    addon_of(script).tls_clienthello(data)
    assert data.ignore_connection is False
    data = hello_data("regular", None, connect_host="github.com")
    addon_of(script).tls_clienthello(data)
    assert data.ignore_connection is True


def test_hook_never_ignores_in_reverse_mode(tv) -> None:
    tctx, script = tv
    tctx.configure(script, toolvocab_hosts=None, toolvocab_intercept="known")
    data = hello_data("reverse:https://api.anthropic.com", "github.com")
    addon_of(script).tls_clienthello(data)
    assert data.ignore_connection is False


def test_hook_with_hosts_option_and_intercept_all(tv) -> None:
    tctx, script = tv
    tctx.configure(script, toolvocab_hosts=r"(^|\.)llm\.test$", toolvocab_intercept="known")
    for sni, ignored in (("gw.llm.test", False), ("api.anthropic.com", True)):
        data = hello_data("regular", sni)
        addon_of(script).tls_clienthello(data)
        assert data.ignore_connection is ignored, sni
    tctx.configure(script, toolvocab_hosts=None, toolvocab_intercept="all")
    data = hello_data("regular", "github.com")
    addon_of(script).tls_clienthello(data)
    assert data.ignore_connection is False
    tctx.configure(script, toolvocab_intercept="known")


def test_hook_keeps_another_addons_ignore(tv) -> None:
    tctx, script = tv
    tctx.configure(script, toolvocab_hosts=None, toolvocab_intercept="all")
    data = hello_data("regular", "api.anthropic.com")
    data.ignore_connection = True
    addon_of(script).tls_clienthello(data)
    assert data.ignore_connection is True
    tctx.configure(script, toolvocab_intercept="known")


def test_bad_intercept_value_is_an_options_error(tv) -> None:
    tctx, script = tv
    with pytest.raises(exceptions.OptionsError, match="toolvocab_intercept"):
        tctx.configure(script, toolvocab_intercept="some")
