"""Regular (forward) mode: which TLS connections are intercepted (the known LLM API hosts, or
``toolvocab_hosts``) and which pass as untouched tunnels; the start-up line. Option:
``toolvocab_intercept``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from typing import Any

from mitmproxy import exceptions

from toolvocab import hosts
from toolvocab.addons.options import Configurable
from toolvocab.addons.options import check_deferred

if TYPE_CHECKING:
    from toolvocab.addons.core import ToolVocab

logger = logging.getLogger(__name__)


class ToolVocabIntercept(Configurable):
    """``tls_clienthello``: intercept or tunnel; ``running``: one line describing the setup.
    ``core``: the repair addon, whose ``toolvocab_hosts`` and mode it reads."""

    def __init__(self, core: ToolVocab) -> None:
        self.core = core
        self.intercept_all = False

    def load(self, loader: Any) -> None:
        """Register ``toolvocab_intercept``."""
        loader.add_option(
            name="toolvocab_intercept",
            typespec=str,
            default="known",
            help=(
                "known or all. Regular (forward) mode: 'known' intercepts TLS only to the known LLM API hosts "
                "(or toolvocab_hosts) and tunnels every other connection untouched; 'all' intercepts every "
                "connection, as mitmproxy does without the addon. Reverse mode is not affected."
            ),
            choices=hosts.INTERCEPT_CHOICES,
        )
        check_deferred(loader, ("toolvocab_intercept",))

    def _configure(self, updated: set[str]) -> None:
        """Validate ``toolvocab_intercept``; raises ``OptionsError``."""
        from mitmproxy import ctx

        if "toolvocab_intercept" in updated:
            value = ctx.options.toolvocab_intercept
            if value not in hosts.INTERCEPT_CHOICES:
                raise exceptions.OptionsError(
                    f"toolvocab_intercept: {value!r} is not one of {', '.join(hosts.INTERCEPT_CHOICES)}"
                )
            self.intercept_all = value == "all"

    def running(self) -> None:
        """One line at start: toolvocab mode, proxy mode(s), profile file and host rule (none when
        the options could not all be read: the repair addon says that no flow is touched; none when
        an option's name is unknown: the proxy stops at start, and the line would say it runs)."""
        from mitmproxy import ctx

        if not self.core.ready or self.core.unknown_options:
            return  # the repair addon said why no flow is touched, or why the proxy stops
        try:
            logger.info(
                hosts.start_line(ctx.options.mode, self.core.mode, ctx.options.toolvocab_profiles, self.host_rule())
            )
        except Exception:
            logger.exception("toolvocab: could not describe the configuration")

    def host_rule(self) -> hosts.HostRule:
        """The regular-mode interception rule from ``toolvocab_hosts`` / ``toolvocab_intercept``."""
        return hosts.HostRule(hosts=self.core.hosts, intercept_all=self.intercept_all)

    def tls_clienthello(self, data: Any) -> None:
        """Regular (forward) mode: intercept TLS only to the hosts of :meth:`host_rule`; every other
        connection passes as an untouched tunnel (``ignore_connection``). Never in reverse mode
        (the client talks to the proxy itself there), and never undoes another addon's choice."""
        try:
            if data.ignore_connection or is_reverse(data.context.client.proxy_mode):
                return
            host = hosts.connection_host(data.client_hello.sni, data.context.server.address)
            if not self.host_rule().intercepts(host):
                data.ignore_connection = True
                logger.debug(
                    "toolvocab: tunnelling %s untouched (not a known LLM API host)",
                    host or "a connection without a host name",
                )
        except Exception:  # the addon never breaks a connection: mitmproxy decides as usual
            logger.exception("toolvocab: tls_clienthello failed; mitmproxy's default applies")


def is_reverse(proxy_mode: Any) -> bool:
    """True for mitmproxy's reverse mode (``mode_specs.ReverseMode`` in mitmproxy 11 and 12)."""
    return type(proxy_mode).__name__ == "ReverseMode"
