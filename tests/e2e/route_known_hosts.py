"""Test-only mitmproxy script for the regular-mode e2e tests (never part of the product).

Loaded *after* ``addon/toolvocab.py``, so toolvocab sees every flow with the host the agent asked
for. Then:

* ``request``: a flow to a host toolvocab intercepted (the agent's default LLM host, e.g.
  ``api.anthropic.com``) goes to the local fake upstream instead (plain HTTP on 127.0.0.1); the
  ``Host`` header / ``:authority`` the agent sent stay as they were;
* ``server_connect``: a connection toolvocab left as a tunnel to a host named in
  ``route_tunnels`` (``name=port,…``) is opened to ``127.0.0.1:port``, so a test can stand up
  a TLS server with its own certificate under a made-up name.

With ``connection_strategy=lazy`` mitmproxy opens no server connection before the first request,
so the real LLM hosts are never resolved or contacted. Options: ``route_upstream`` (the fake
upstream's URL, ``http://127.0.0.1:PORT``), ``route_tunnels``.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from mitmproxy import ctx
from mitmproxy import http

logger = logging.getLogger(__name__)


class RouteKnownHosts:
    def __init__(self) -> None:
        self.upstream: tuple[str, int] | None = None
        self.tunnels: dict[str, int] = {}

    def load(self, loader: Any) -> None:
        loader.add_option("route_upstream", str, "", "http://127.0.0.1:PORT of the fake upstream")
        loader.add_option("route_tunnels", str, "", "name=port,... : tunnels to these names go to 127.0.0.1:port")

    def configure(self, updated: set[str]) -> None:
        if "route_upstream" in updated and ctx.options.route_upstream:
            parts = urlsplit(ctx.options.route_upstream)
            self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        if "route_tunnels" in updated:
            self.tunnels = {}
            for item in filter(None, ctx.options.route_tunnels.split(",")):
                name, _, port = item.partition("=")
                self.tunnels[name.strip().lower()] = int(port)

    def request(self, flow: http.HTTPFlow) -> None:
        if self.upstream is None or flow.request.host in ("127.0.0.1", "localhost"):
            return
        host_header = flow.request.headers.get("host")
        authority = flow.request.authority
        asked = f"{flow.request.scheme}://{flow.request.pretty_host}:{flow.request.port}"
        flow.request.scheme = "http"
        flow.request.host, flow.request.port = self.upstream
        # keep what the agent sent: the Host header / :authority name its default LLM host
        if host_header is not None:
            flow.request.headers["host"] = host_header
        flow.request.authority = authority
        flow.metadata["routed_from"] = asked
        logger.info("route_known_hosts: %s %s → fake upstream", asked, flow.request.path.split("?", 1)[0])

    def server_connect(self, data: Any) -> None:
        address = data.server.address
        if address and str(address[0]).lower() in self.tunnels:
            data.server.address = ("127.0.0.1", self.tunnels[str(address[0]).lower()])


addons = [RouteKnownHosts()]
