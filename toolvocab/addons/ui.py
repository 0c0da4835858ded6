"""toolvocab in mitmproxy's UIs: the ``toolvocab`` contentview and the ``toolvocab.explain`` /
``toolvocab.stats`` / ``toolvocab.tools`` commands (addon name ``toolvocabui``).

* The contentview renders the record in ``flow.metadata["toolvocab"]`` above the message body
  (:func:`toolvocab.report.render_message`). On flows whose record says toolvocab handled them it
  outranks the JSON view in "auto", on the request and on the response alike; elsewhere it can
  still be picked by name. mitmproxy 11 (``contentviews.View``) and 12
  (``contentviews.Contentview``) are both served (reference §6, G12).
* ``:toolvocab.explain @focus`` tells why each name was or was not repaired;
  ``:toolvocab.stats @all`` counts flows by state, decisions, ladder steps, clients, hosts,
  dialects, models and tool errors; ``:toolvocab.tools @focus [shape]`` prints the tools the
  flow's client declared. Each logs its text at ALERT and returns it — except in mitmweb, whose
  command bar shows a command's return value as ``JSON.stringify(value)`` in a plain ``div``
  (``CommandBar`` in mitmproxy's web frontend, 11.0.2 and 12.x: a text's newlines arrive as
  ``\n``): there the text is read in the event log (a ``pre``) and the command returns one line
  saying so. The console shows the returned text in its data viewer, newlines kept. Flow
  arguments resolve in mitmproxy's console and mitmweb, not in mitmdump (G9).
* mitmweb's flow list shows the comment column (each flow's state and reason, first words first)
  when ``web_columns`` is at mitmweb's default: the addon adds ``comment`` to it at start.
"""

from __future__ import annotations

import collections.abc
import logging
from typing import Any

from mitmproxy import command
from mitmproxy import contentviews
from mitmproxy import exceptions
from mitmproxy import flow as mflow
from mitmproxy.log import ALERT

from toolvocab.engine.export import SHAPES
from toolvocab.report import VIEW_NAME
from toolvocab.report import explain_flows
from toolvocab.report import render_message
from toolvocab.report import stats_text
from toolvocab.report import tools_text
from toolvocab.report import view_priority

logger = logging.getLogger(__name__)


# -- the contentview (mitmproxy 11 and 12, G12) ----------------------------------------------------

if hasattr(contentviews, "Contentview"):  # mitmproxy >= 12

    class ToolVocabContentview(contentviews.Contentview):
        """The toolvocab record above the pretty-printed body."""

        name = VIEW_NAME
        syntax_highlight = "none"

        def prettify(self, data: bytes, metadata: contentviews.Metadata) -> str:
            return render_message(data, metadata.flow, metadata.http_message)

        def render_priority(self, data: bytes, metadata: contentviews.Metadata) -> float:
            return view_priority(metadata.flow, metadata.http_message)

    VIEW: Any = ToolVocabContentview()
    contentviews.add(VIEW)  # the same name replaces an earlier registration (hot-reload safe)

    def register_view() -> None:
        """Put the view back if a reload of another copy of this module replaced it."""
        if contentviews.registry.get(VIEW_NAME) is not VIEW:
            contentviews.add(VIEW)

    def unregister_view() -> None:
        """Nothing to do on 12: ``remove`` is a deprecated no-op there; a reload replaces the view."""

else:  # mitmproxy 11

    class ToolVocabView(contentviews.View):
        """The toolvocab record above the pretty-printed body."""

        name = VIEW_NAME

        def __call__(
            self,
            data: bytes,
            *,
            content_type: str | None = None,
            flow: Any = None,
            http_message: Any = None,
            **unknown: Any,
        ):
            text = render_message(data, flow, http_message)
            # mitmweb 11 draws an empty line with no height: keep the blank lines visible
            return "toolvocab", contentviews.format_text("\n".join(line or " " for line in text.split("\n")))

        def render_priority(
            self,
            data: bytes,
            *,
            content_type: str | None = None,
            flow: Any = None,
            http_message: Any = None,
            **unknown: Any,
        ) -> float:
            return view_priority(flow, http_message)

    VIEW = ToolVocabView()

    def register_view() -> None:
        """Add the view, replacing any view of the same name (``add`` refuses duplicates, and a
        hot reload may leave an older one behind)."""
        existing = contentviews.get(VIEW_NAME)
        if existing is not None:
            contentviews.remove(existing)
        contentviews.add(VIEW)

    def unregister_view() -> None:
        if VIEW in contentviews.views:
            contentviews.remove(VIEW)


# -- the addon ------------------------------------------------------------------------------------


def _answer(command_name: str, text: str, summary: str) -> str:
    """Log ``text`` and return it; in mitmweb (which shows a returned text as one JSON-quoted
    line) log it at ``info`` (its event log has no ``alert`` filter: an ALERT entry is never shown
    there, 11.0.2 and 12.x) and return one line: ``summary`` and where the text is. Elsewhere
    log it at ALERT (the console's status line)."""
    from mitmproxy import ctx

    try:
        web = ctx.master.addons.get("webaddon") is not None
    except Exception:
        web = False
    logger.log(logging.INFO if web else ALERT, text)
    if web:
        lines = text.count("\n") + 1
        return f"{command_name}: {summary} — {lines} line{'' if lines == 1 else 's'} in the event log (Options → Display Event Log)"
    return text


def _one_paragraph(func: collections.abc.Callable[..., Any]) -> collections.abc.Callable[..., Any]:
    """``func`` with its docstring as one line: mitmproxy shows a command's docstring as one
    paragraph (``mitmproxy/command.py``, ``Command``: stripped, then ``textwrap.wrap``), which keeps
    a continuation line's indentation as a run of spaces inside the text."""
    func.__doc__ = " ".join((func.__doc__ or "").split())
    return func


class ToolVocabUI:
    """The contentview's registration, the ``toolvocab.explain`` / ``toolvocab.stats`` /
    ``toolvocab.tools`` commands and mitmweb's comment column. Addon name ``toolvocabui``."""

    def load(self, loader: Any) -> None:
        register_view()

    def done(self) -> None:
        unregister_view()

    def running(self) -> None:
        """In mitmweb, show the comment column (the state and reason of each flow) unless the
        user chose the columns (``web_columns`` differs from mitmweb's default)."""
        from mitmproxy import ctx

        try:
            if "web_columns" in ctx.options:
                columns = list(ctx.options.web_columns)
                if "comment" not in columns and columns == list(ctx.options.default("web_columns")):
                    ctx.options.update(web_columns=[*columns, "comment"])
        except Exception:  # a UI nicety: never fatal
            logger.debug("toolvocab: could not add the comment column", exc_info=True)

    @command.command("toolvocab.explain")
    @_one_paragraph
    def explain(self, flows: collections.abc.Sequence[mflow.Flow]) -> str:
        """Why each tool name in the flows was or was not repaired: ladder step, candidates, reason."""
        text = explain_flows(flows)
        return _answer("toolvocab.explain", text, f"{len(flows)} flow{'' if len(flows) == 1 else 's'}")

    @command.command("toolvocab.tools")
    @_one_paragraph
    def tools(self, flow: mflow.Flow, shape: str = "normalized") -> str:
        """The tools this flow's client declared, normalized or in one API's shape: normalized,
        anthropic, openai_chat, openai_responses, gemini or langchain (names as the client
        declared them; the record's rename_map says what went upstream)."""
        if shape not in SHAPES:
            raise exceptions.CommandError(f"shape must be one of {', '.join(SHAPES)}")
        text = tools_text([flow], shape)
        return _answer("toolvocab.tools", text, f"the tools of flow {str(flow.id)[:8]} as {shape}")

    @command.command("toolvocab.stats")
    @_one_paragraph
    def stats(self, flows: collections.abc.Sequence[mflow.Flow]) -> str:
        """Counts of toolvocab's decisions, ladder steps, clients, hosts, dialects, models and tool
        errors over the flows, with call totals and median latencies."""
        text = stats_text(flows)
        return _answer("toolvocab.stats", text, text.split("\n", 1)[0].removeprefix("toolvocab stats: "))
