"""Per-flow state between hooks: the dialect, the declared tools, the plan, the record, and the
resolver the dialects call for every tool call in the answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolvocab.dialects import pipeline
from toolvocab.dialects.base import Dialect
from toolvocab.dialects.base import FrameRewriter
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Decision
from toolvocab.engine.models import ToolCall
from toolvocab.engine.plan import Plan
from toolvocab.engine.record import FlowRecord

if TYPE_CHECKING:
    from toolvocab.addons.stream import StreamCallable


class FlowState:
    """Per-flow Python state between hooks (never stored in metadata).

    Created by the request hook (:class:`toolvocab.addons.core.ToolVocab`) for a flow it will
    handle, or by the WebSocket transport for each ``response.create`` turn; the dialects call it
    as their resolver (``state(call) -> Decision``).
    """

    def __init__(
        self,
        dialect: Dialect,
        tools: Toolset,
        plan: Plan,
        record: FlowRecord,
        wants_stream: bool,
        windows: bool = False,
    ) -> None:
        self.dialect = dialect
        self.windows = windows  # the request says the agent runs on Windows: no command moves between shells
        self.tools = tools
        self.plan = plan
        self.record = record
        self.wants_stream = wants_stream
        self.stream: StreamCallable | None = None
        self.ws_rewriter: FrameRewriter | None = None  # the WebSocket turn's rewriter (Responses frames)
        self.ws_unrepaired = 0  # calls of ws_rewriter.unrepaired already noted
        self.logged: set[str] = set()  # log lines already written for this flow (a WebSocket's turns)
        self.original_request: bytes | None = None  # the client's body, when it was changed
        self.upstream_raw: bytes | None = None  # the upstream's answer, when it was changed
        self.unverified: bytes | None = None  # the client's body, while only peeked (pipeline.Handled.verified)
        self.refused: str | None = None  # why the whole read refused the request (may_change)

    def may_change(self) -> bool:
        """True when the answer may change on the strength of this flow's request: at once for a
        request read whole; for one only peeked, once :func:`toolvocab.dialects.pipeline.verify`
        of the whole body finds nothing against it (run here, once, at the first change). When
        it does, the record becomes the one the request hook gives a request it leaves as sent
        (:attr:`refused`: why), and this and every later answer byte must go as the upstream
        sent it."""
        if self.refused is not None:
            return False
        if self.unverified is None:
            return True
        content, self.unverified = self.unverified, None
        reason = pipeline.verify(content)
        if reason is None:
            return True
        self.refused = reason
        self.record = FlowRecord(mode=self.record.mode, skipped=reason)
        return False

    def __call__(self, call: ToolCall) -> Decision:
        """The dialects' ``Resolver``: the ladder over this flow's tools; records the decision.
        ``self.tools`` is there too, for dialects that lift calls out of text."""
        return self.resolver(call)

    def resolver(self, call: ToolCall) -> Decision:
        decision = resolve(call, self.tools, self.plan.reverse_map, client=self.record.client, windows=self.windows)
        self.record.decisions.append(decision)
        return decision
