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

_LINE_END = re.compile(rb"\r\n|\r|\n")
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
            field_name, _, field_value = line.partition(":")
            if field_name == "data" and not line.startswith(":"):
                if not placed:
                    sep = " " if field_value.startswith(" ") else ""
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

    Lines end with CRLF, LF or CR, and a block ends at an empty line (WHATWG HTML, "Parsing an
    event stream"), so mixed endings such as ``data: x\n\r\n`` end a block too. A CR at the
    very end of the buffer waits for the next byte (it may be half of a CRLF), so the result never
    depends on where the transport cut the stream. ``flush()`` returns the bytes left at end of
    stream (an unterminated last block), which callers pass through unchanged.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0  # where the next line starts (within the current block)
        self.consumed = 0  # bytes taken in by feed() so far

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Append ``chunk``; return every block it completes, in order."""
        return self._feed(chunk, eof=False)

    def close(self) -> list[SSEEvent]:
        """End of stream: a CR at the very end is a line end after all; return the blocks that
        completes. What is still unterminated stays for :meth:`flush`."""
        return self._feed(b"", eof=True)

    def _feed(self, chunk: bytes, *, eof: bool) -> list[SSEEvent]:
        self._buf += chunk
        self.consumed += len(chunk)
        events: list[SSEEvent] = []
        block_start = 0
        line_start = self._scan
        buf = self._buf
        while True:
            m = _LINE_END.search(buf, line_start)
            if m is None:
                break
            if m.group() == b"\r" and m.end() == len(buf) and not eof:
                break  # may be the first half of CRLF
            empty = m.start() == line_start
            line_start = m.end()
            if empty:
                events.append(SSEEvent.parse(bytes(buf[block_start:line_start])))
                block_start = line_start
        if block_start:
            del self._buf[:block_start]
        self._scan = line_start - block_start
        return events

    def flush(self) -> bytes:
        """Return and clear the unterminated remainder."""
        rest = bytes(self._buf)
        self._buf.clear()
        self._scan = 0
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

    @property
    def consumed(self) -> int:
        """Upstream bytes taken in so far."""
        return self._parser.consumed

    def salvage(self) -> list[bytes]:
        """Every upstream byte taken in but not yet sent (held events, then the parser's
        remainder), unchanged; afterwards the rewriter passes everything through."""
        if self.error is None:
            self.error = "salvaged"
        out = self.held()
        rest = self._parser.flush()
        if rest:
            out.append(rest)
        return [b for b in out if b]

    def at_end(self) -> list[bytes]:
        """End of stream, after the last event: what is still held (default: unchanged)."""
        return self.held()

    def _process(self, events: list[SSEEvent]) -> list[bytes]:
        out: list[bytes] = []
        for i, event in enumerate(events):
            try:
                out.extend(self.on_event(event))
            except Exception as exc:  # contain: pass the rest through byte-identical
                self.error = f"{type(exc).__name__}: {exc}"
                held = self.held()
                rest = events[i:]
                if held and held[-1] is rest[0].raw:
                    rest = rest[1:]  # the failing event was already held
                out.extend(held)
                out.extend(e.raw for e in rest)
                remainder = self._parser.flush()
                if remainder:
                    out.append(remainder)
                break
        return out

    def feed(self, chunk: bytes) -> list[bytes]:
        """Bytes to send for ``chunk``: complete events only, never a lone ``b""``."""
        if self.error is not None:
            return [chunk] if chunk else []
        return [b for b in self._process(self._parser.feed(chunk)) if b]

    def finish(self) -> list[bytes]:
        """End of stream: blocks completed only by the end (a final CR), then what is held
        (:meth:`at_end`), then the unterminated remainder."""
        out: list[bytes] = []
        if self.error is None:
            out = self._process(self._parser.close())
            if self.error is None:
                try:
                    out.extend(self.at_end())
                except Exception as exc:
                    self.error = f"{type(exc).__name__}: {exc}"
                    out.extend(self.held())
        rest = self._parser.flush()
        if rest:
            out.append(rest)
        return [b for b in out if b]
