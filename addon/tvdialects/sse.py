"""Incremental Server-Sent Events framing that keeps every byte it does not change.

The parser cuts a byte stream at blank lines (``\\n\\n``, ``\\r\\n\\r\\n`` or ``\\r\\r``, per the
WHATWG HTML "Server-sent events" section) into :class:`SSEEvent` blocks, each holding its exact
raw bytes. A block that nobody changes is written back as those bytes; a changed block is
rebuilt with its own line endings, field order and terminator, with only its ``data`` replaced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field

import orjson

_TERMINATOR = re.compile(rb"\r\n\r\n|\n\n|\r\r(?!\n)")
_LINE = re.compile(r"\r\n|\r|\n")


@dataclass
class SSEEvent:
    """One SSE block: ``raw`` is its exact bytes including the blank-line terminator.

    ``event`` is the ``event:`` field (``None`` when absent), ``data`` the ``data:`` lines joined
    by ``\\n`` (``None`` when the block has no data line: a comment or keep-alive).
    """

    raw: bytes
    event: str | None = None
    data: str | None = None
    _json: object = field(default=None, repr=False)
    _parsed: bool = field(default=False, repr=False)

    @classmethod
    def parse(cls, raw: bytes) -> SSEEvent:
        """Parse one block (as cut by :class:`SSEParser`). Never raises on odd bytes."""
        text = raw.decode("utf-8", errors="surrogateescape")
        event: str | None = None
        data: list[str] = []
        for line in _LINE.split(text):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        return cls(raw=raw, event=event, data="\n".join(data) if data else None)

    def json(self) -> object:
        """The ``data`` parsed as JSON, or ``None`` when absent or not JSON (cached)."""
        if not self._parsed:
            self._parsed = True
            if self.data is not None:
                try:
                    self._json = orjson.loads(self.data)
                except orjson.JSONDecodeError:
                    self._json = None
        return self._json

    def with_json(self, value: object) -> SSEEvent:
        """A copy whose ``data`` is ``value`` as compact JSON, framing otherwise as in ``raw``.

        Keeps the block's line ending, its non-data lines in place (``event:``, ``id:``,
        comments) and its terminator; the data lines become one ``data:`` line at the position
        of the first.
        """
        payload = orjson.dumps(value).decode()
        text = self.raw.decode("utf-8", errors="surrogateescape")
        m = _LINE.search(text)
        eol = m.group(0) if m else "\n"
        body = text.rstrip("\r\n")
        terminator = text[len(body) :]
        out: list[str] = []
        placed = False
        for line in _LINE.split(body):
            name, _, value = line.partition(":")
            if name == "data" and not line.startswith(":"):
                if not placed:
                    sep = " " if value.startswith(" ") else ""
                    out.append(f"data:{sep}{payload}")
                    placed = True
                continue
            out.append(line)
        if not placed:
            out.append(f"data: {payload}")
        raw = (eol.join(out) + terminator).encode("utf-8", errors="surrogateescape")
        new = SSEEvent(raw=raw, event=self.event, data=payload)
        new._json, new._parsed = value, True
        return new


class SSEParser:
    """Feed bytes, get whole :class:`SSEEvent` blocks; the remainder waits for more bytes.

    ``feed(chunk)`` returns the blocks completed by ``chunk``; ``flush()`` returns the bytes left
    over at end of stream (an unterminated last block), which callers pass through unchanged.
    """

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Append ``chunk``; return every block it completes, in order."""
        self._buf += chunk
        events: list[SSEEvent] = []
        start = 0
        while True:
            m = _TERMINATOR.search(self._buf, start)
            if m is None:
                break
            events.append(SSEEvent.parse(bytes(self._buf[start : m.end()])))
            start = m.end()
        if start:
            del self._buf[:start]
        return events

    def flush(self) -> bytes:
        """Return and clear the unterminated remainder."""
        rest = bytes(self._buf)
        self._buf.clear()
        return rest

    @property
    def pending(self) -> int:
        """Bytes waiting for a terminator."""
        return len(self._buf)


class EventStreamRewriter:
    """Base for a dialect's SSE rewriter: framing, error containment and end of stream.

    Subclasses implement :meth:`on_event` (return the bytes to send for one whole event, or
    ``[]`` to hold it) and :meth:`held` (the raw bytes of events held so far, in order). If
    :meth:`on_event` raises, the held events and the failing event go out unchanged and the rest
    of the stream passes through untouched; ``error`` keeps the exception text.
    """

    def __init__(self) -> None:
        self._parser = SSEParser()
        self.error: str | None = None

    def on_event(self, event: SSEEvent) -> list[bytes]:
        """Bytes to send for ``event`` (``[]`` to hold it)."""
        raise NotImplementedError

    def held(self) -> list[bytes]:
        """Raw bytes of the events currently held, in order; clears the hold."""
        return []

    def feed(self, chunk: bytes) -> list[bytes]:
        """Bytes to send for ``chunk``: complete events only, never a lone ``b""``."""
        if self.error is not None:
            return [chunk] if chunk else []
        out: list[bytes] = []
        events = self._parser.feed(chunk)
        for i, event in enumerate(events):
            try:
                out.extend(self.on_event(event))
            except Exception as exc:  # contain: pass the rest through byte-identical
                self.error = f"{type(exc).__name__}: {exc}"
                out.extend(self.held())
                out.extend(e.raw for e in events[i:])
                rest = self._parser.flush()
                if rest:
                    out.append(rest)
                break
        return [b for b in out if b]

    def finish(self) -> list[bytes]:
        """End of stream: held events unchanged, then the unterminated remainder."""
        out = list(self.held()) if self.error is None else []
        rest = self._parser.flush()
        if rest:
            out.append(rest)
        return [b for b in out if b]
