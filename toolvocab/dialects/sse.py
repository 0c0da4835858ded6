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

from toolvocab.engine import jsonio

_LINE_END = re.compile(rb"\r\n|\r|\n")
_LINE = re.compile(r"\r\n|\r|\n")
#: The byte order mark an event stream may begin with, which a client's parser skips (WHATWG
#: HTML, "Parsing an event stream": one leading U+FEFF; ``TextDecoder`` strips it): the text of
#: :data:`toolvocab.engine.jsonio.BOM`.
BOM = jsonio.BOM.decode()


class RepeatedKey(Exception):
    """An event's data (or a WebSocket frame) that a rewriter reads repeats a key in one of its
    objects: which value the client reads is its parser's choice, and a rewrite would keep only
    the last one. Raised by ``json()``; the rewriters contain it like any error of their own:
    what is held, this event and the rest of the stream go out as they came. Deliberately not a
    ``ValueError`` (code that treats unparsable data as "not JSON" must not swallow it)."""

    NOTE = "an event's data repeats a key; it, what was held and the rest of the stream passed as they came"

    def __init__(self) -> None:
        super().__init__(self.NOTE)


class Unreadable(Exception):
    """An event a rewriter must read to finish a held tool call is not JSON: the call cannot be
    known whole, so it is neither decided nor completed. Raised by a rewriter and contained like
    any error of its own: what is held, this event and the rest of the stream go out as they
    came."""

    NOTE = "an event inside a held tool call is not JSON"

    def __init__(self) -> None:
        super().__init__(self.NOTE)


def parse_checked(raw: bytes) -> object:
    """``raw`` parsed strictly (:func:`toolvocab.engine.jsonio.loads_checked`: the keys counted in
    the same read), ``None`` when it is not JSON; raises :class:`RepeatedKey` when an object in it
    repeats a key. For data a rewriter reads anyway (marker-bearing or held events)."""
    try:
        value, unique, _ = jsonio.loads_checked(raw)
    except ValueError:
        return None
    if not unique:
        raise RepeatedKey()
    return value


#: The characters ``str.splitlines()`` ends a line at that JSON may hold unescaped in a string:
#: NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR (the others, ``\x0b``, ``\x0c``, ``\x1c``-``\x1e``,
#: are control characters JSON escapes). A client that reads an event stream's lines with it
#: (google-genai's ``iter_lines``) would cut a ``data:`` line holding one raw.
_LINE_BREAKING = ("\x85", "\u2028", "\u2029")


def data_line_json(value: object) -> str:
    """``value`` as compact JSON for one SSE ``data:`` line (:func:`toolvocab.engine.jsonio.dumps`),
    each :data:`_LINE_BREAKING` character written as its ``\\uXXXX`` escape (the same JSON).
    Raises as ``dumps`` does."""
    text = jsonio.dumps(value).decode()
    for char in _LINE_BREAKING:
        if char in text:
            text = text.replace(char, f"\\u{ord(char):04x}")
    return text


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
    _repeated: bool = field(default=False, repr=False)

    @classmethod
    def parse(cls, raw: bytes) -> SSEEvent:
        """Parse one block (as cut by :class:`SSEParser`); a leading :data:`BOM` is skipped, as a
        client skips it at the stream's start (``raw`` keeps it). Never raises on odd bytes."""
        text = raw.decode("utf-8", errors="surrogateescape").removeprefix(BOM)
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
        """The ``data`` parsed as JSON, or ``None`` when absent or not JSON (cached); raises
        :class:`RepeatedKey` (every time) when it repeats a key."""
        if not self._parsed:
            self._parsed = True
            if self.data is not None:
                try:
                    # strict, big integers exact, lone surrogate escapes kept (toolvocab.engine.jsonio)
                    self._json = parse_checked(self.data.encode("utf-8", errors="surrogateescape"))
                except RepeatedKey:
                    self._repeated = True
        if self._repeated:
            raise RepeatedKey()
        return self._json

    def with_json(self, value: object) -> SSEEvent:
        """A copy whose ``data`` is ``value`` as compact JSON, framing otherwise as in ``raw``.

        Keeps the block's line ending, its non-data lines in place (``event:``, ``id:``,
        comments), a leading :data:`BOM` and its terminator; the data lines become one ``data:``
        line at the position of the first.
        """
        payload = data_line_json(value)
        text = self.raw.decode("utf-8", errors="surrogateescape")
        bom = BOM if text.startswith(BOM) else ""
        text = text[len(bom) :]
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
        raw = (bom + eol.join(out) + terminator).encode("utf-8", errors="surrogateescape")
        new = SSEEvent(raw=raw, event=self.event, data=payload)
        new._json, new._parsed = value, True
        return new


class SSEParser:
    """Feed bytes, get whole :class:`SSEEvent` blocks; the remainder waits for more bytes.

    Lines end with CRLF, LF or CR, and a block ends at an empty line (WHATWG HTML, "Parsing an
    event stream"), so mixed endings such as ``data: x\n\r\n`` end a block too. A CR at the
    very end of the buffer waits for the next byte (it may be half of a CRLF), so the result never
    depends on where the transport cut the stream. ``flush()`` returns the bytes left at end of
    stream (an unterminated last block), which callers pass through unchanged (or read as a last
    event: ``EventStreamRewriter.READS_UNTERMINATED``).

    Work is linear in the bytes fed whatever the piece sizes: every byte is searched once (an
    unfinished line is not searched again when more of it arrives).
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0  # where the current line starts (within the current block)
        self._search = 0  # where the search for the next line end resumes (>= _scan)
        self.consumed = 0  # bytes taken in by feed() so far
        self.searched = 0  # bytes handed to the line-end search so far (for linearity tests)

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Append ``chunk``; return every block it completes, in order."""
        return [SSEEvent.parse(raw) for raw in self._feed(chunk, eof=False)]

    def feed_raw(self, chunk: bytes) -> list[bytes]:
        """Like :meth:`feed`, returning each completed block's raw bytes (nothing parsed)."""
        return self._feed(chunk, eof=False)

    def close(self) -> list[SSEEvent]:
        """End of stream: a CR at the very end is a line end after all; return the blocks that
        completes. What is still unterminated stays for :meth:`flush`."""
        return [SSEEvent.parse(raw) for raw in self._feed(b"", eof=True)]

    def close_raw(self) -> list[bytes]:
        """Like :meth:`close`, returning raw blocks."""
        return self._feed(b"", eof=True)

    def _feed(self, chunk: bytes, *, eof: bool) -> list[bytes]:
        self._buf += chunk
        self.consumed += len(chunk)
        blocks: list[bytes] = []
        block_start = 0
        line_start = self._scan
        pos = self._search
        buf = self._buf
        n = len(buf)
        search = _LINE_END.search
        while True:
            m = search(buf, pos)
            if m is None:
                self.searched += n - pos
                pos = n
                break
            end = m.end()
            if end == n and not eof and buf[m.start()] == 0x0D and end - m.start() == 1:
                self.searched += m.start() - pos
                pos = m.start()  # may be the first half of CRLF: look again from here
                break
            self.searched += end - pos
            empty = m.start() == line_start
            line_start = pos = end
            if empty:
                blocks.append(bytes(buf[block_start:line_start]))
                block_start = line_start
        if block_start:
            del self._buf[:block_start]
        self._scan = line_start - block_start
        self._search = pos - block_start
        return blocks

    def flush(self) -> bytes:
        """Return and clear the unterminated remainder."""
        rest = bytes(self._buf)
        self._buf.clear()
        self._scan = 0
        self._search = 0
        return rest

    @property
    def pending(self) -> int:
        """Bytes waiting for a terminator."""
        return len(self._buf)

    @property
    def rest(self) -> bytes:
        """The bytes waiting for a terminator (what :meth:`flush` would return), left in place."""
        return bytes(self._buf)

    @property
    def pending_blank(self) -> bool:
        """True when the bytes waiting for a terminator are whitespace at most (no event in them)."""
        return not bytes(self._buf).strip()


#: Every dialect's markers include this: a JSON ``\\u`` escape can spell any marker.
_ESCAPE = b"\\u"
#: The same search by ``re`` (its literal search keys on the rare backslash: about twice as
#: fast as ``bytes.__contains__`` on JSON text full of ``\\n``).
_ESCAPE_SEARCH = re.compile(re.escape(_ESCAPE)).search


def _split_lf(region: bytes) -> list[bytes]:
    """Cut ``region`` (LF-only, ending at a block boundary) into its blocks, as
    :class:`SSEParser` would: an empty line at a block start is a block of its own."""
    blocks: list[bytes] = []
    pos, n = 0, len(region)
    find = region.find
    while pos < n:
        if region[pos] == 0x0A:
            blocks.append(region[pos : pos + 1])
            pos += 1
            continue
        end = find(b"\n\n", pos) + 2
        if end < 2:  # cannot happen for a region that ends at a boundary; keep every byte
            end = n
        blocks.append(region[pos:end])
        pos = end
    return blocks


class EventStreamRewriter:
    """Base for a dialect's SSE rewriter: framing, error containment and end of stream.

    Subclasses implement :meth:`on_event` (return the bytes to send for one whole event, or
    ``[]`` to hold it) and :meth:`held` (the raw bytes of events held so far, in order). If
    :meth:`on_event` raises, the held events and the failing event go out unchanged and the rest
    of the stream passes through untouched; ``error`` keeps the exception text. An event that
    cannot be read (:class:`RepeatedKey`, :class:`Unreadable`) in a dialect that can give its
    aliases back (:meth:`give_back`) is contained with less: what is held goes as it came but for
    this flow's upstream aliases, named back, the event as it came, and the rest is read for
    those names only (``contained`` keeps the exception text; ``error`` stays ``None``), so the
    client never gets a name it did not declare from an event toolvocab can read.

    Cost follows what can change, not the bytes. A subclass names in :attr:`MARKERS`
    byte strings one of which is in every event it may change or must see to keep its state
    (``\\u`` is added: an escape can spell any marker); while it holds events,
    :meth:`holding` is True and every event goes to :meth:`on_event`. Otherwise an event
    without a marker is passed on as received, unparsed. For an LF-only stream (the common
    case) a chunk without a marker costs a few C-level scans: the bytes up to its last event
    boundary go out as they came, and only the unfinished tail waits. :meth:`feed` returns at
    most ONE piece per chunk (mitmproxy frames and writes each returned piece separately).
    ``MARKERS = None`` parses every event. Work per byte is linear whatever the piece sizes.
    """

    #: Byte strings, one of which is in every event :meth:`on_event` must see (``None``: all).
    MARKERS: tuple[bytes, ...] | None = None
    #: Whether the bytes after the last blank line at the end of the stream are read as one last
    #: event (a dialect whose client dispatches it); else they pass as they came (the WHATWG
    #: parser drops an event its blank line never ended, and so do the OpenAI and Anthropic SDKs).
    READS_UNTERMINATED = False

    def __init__(self) -> None:
        self._parser = SSEParser()
        self.error: str | None = None
        #: One sentence per tool call a subclass sent on as it came, unresolved, because it could
        #: not complete (events out of order, the stream's end): the addon notes each as a give-up.
        self.unrepaired: list[str] = []
        #: False once :meth:`let_go` left the rest of the stream unrepaired (a dialect whose calls
        #: cannot be told complete after it): the stall's note says so.
        self.repairs_after_let_go = True
        #: What :meth:`give_back` contained (the exception text of the first event that could not
        #: be read) while the rest is read for this flow's aliases only, or ``None``.
        self.contained: str | None = None
        self._pending = bytearray()  # fast path: bytes after the last block boundary
        self._lf_only = True  # no CR seen yet: a block ends at "\n\n"
        self._consumed = 0
        markers = type(self).MARKERS
        self._markers: tuple[bytes, ...] | None = None if markers is None else tuple(markers) + (_ESCAPE,)
        self._letters: tuple[bytes, ...] = tuple(markers or ())

    def on_event(self, event: SSEEvent) -> list[bytes]:
        """Bytes to send for ``event`` (``[]`` to hold it)."""
        raise NotImplementedError

    def held(self) -> list[bytes]:
        """Raw bytes of the events currently held, in order; clears the hold."""
        return []

    def holding(self) -> bool:
        """True while every event must reach :meth:`on_event` (a block is held, or the
        dialect's state needs each one); the default never holds."""
        return False

    def has_held(self) -> bool:
        """True while whole events are held back from the client (a tool-call block, text that
        may be one): what the addon's stall bound releases (:meth:`salvage`)."""
        return False

    @property
    def consumed(self) -> int:
        """Upstream bytes taken in so far."""
        return self._consumed

    def salvage(self) -> list[bytes]:
        """Every upstream byte taken in but not yet sent (held events, then the framer's
        remainder), unchanged; afterwards the rewriter passes everything through."""
        if self.error is None:
            self.error = "salvaged"
        out = self.held()
        out.append(self._parser.flush())
        out.append(self._take_pending())
        return [b for b in out if b]

    def let_go(self, why: str) -> list[bytes]:
        """What is held, given up now (the stall bound: ``why`` says what stalled); the
        default is :meth:`salvage` (every byte taken in, unchanged, and the rest passes through).
        A dialect that can go on overrides it: each held call goes as it came but for an
        upstream alias of the client's own tool, named back, with ``why`` in its ``unrepaired``
        sentence; held text as it came, never lifted; an unfinished event stays to be completed;
        later events are read as usual."""
        return self.salvage()

    def at_end(self) -> list[bytes]:
        """End of stream, after the last event: what is still held (default: unchanged)."""
        return self.held()

    def give_back(self, why: str) -> list[bytes] | None:
        """At an event that cannot be read: what is held, given up as :meth:`let_go` gives it
        (each call as it came but for an upstream alias of this flow, named back; ``why`` in its
        ``unrepaired`` sentence), after which every later event goes as it came but for such a
        name, given back (nothing else changes: no call is decided, no text lifted). ``None``
        (the default): the dialect cannot, and the held events and the rest pass as they came."""
        return None

    def hold_behind(self, raw: bytes) -> bool:
        """After :meth:`give_back`: hold the event that could not be read (``raw``) behind what
        the dialect still holds, so that it does not overtake it; True when held. The default
        holds nothing back after a give-back, so nothing (False)."""
        return False

    def _take_pending(self) -> bytes:
        rest = bytes(self._pending)
        self._pending.clear()
        return rest

    def _marked(self, raw: bytes) -> bool:
        markers = self._markers
        if markers is None:
            return True
        for m in self._letters:
            if m in raw:
                return True
        # An escape can spell any marker; a one-byte search (memchr-fast) rules most chunks out
        # before the two-byte one, which looks at every byte.
        return b"\\" in raw and _ESCAPE_SEARCH(raw) is not None

    def _process(self, blocks: list[bytes]) -> list[bytes]:
        out: list[bytes] = []
        markers = self._markers
        for i, raw in enumerate(blocks):
            try:
                if markers is not None and not self.holding() and not self._marked(raw):
                    out.append(raw)
                    continue
                out.extend(self.on_event(SSEEvent.parse(raw)))
            except (RepeatedKey, Unreadable) as exc:  # an event that cannot be read
                given = self._give_back(exc)
                if given is None:
                    out.extend(self._pass_rest(exc, blocks[i:]))
                    break
                out.extend(given)
                # the failing event may be among the held ones, or held behind them
                if not any(b is raw for b in given) and not self.hold_behind(raw):
                    out.append(raw)
            except Exception as exc:  # contain: pass the rest through byte-identical
                out.extend(self._pass_rest(exc, blocks[i:]))
                break
        return out

    def _give_back(self, exc: Exception) -> list[bytes] | None:
        """:meth:`give_back` at the event that raised ``exc``; ``None`` when the dialect cannot
        (or it fails: then what it still holds passes as it came with the rest)."""
        try:
            given = self.give_back("an event could not be read")
        except Exception:
            return None
        if given is not None and self.contained is None:
            self.contained = f"{type(exc).__name__}: {exc}"
        return given

    def _pass_rest(self, exc: Exception, rest: list[bytes]) -> list[bytes]:
        """What is held, ``rest`` (from the event that raised ``exc``) and the framer's remainder,
        as they came; from here on every byte passes through (``error``)."""
        self.error = f"{type(exc).__name__}: {exc}"
        held = self.held()
        if held and held[-1] is rest[0]:
            rest = rest[1:]  # the failing event was already held
        return [*held, *rest, self._parser.flush(), self._take_pending()]

    @staticmethod
    def _one(out: list[bytes]) -> list[bytes]:
        if not out:
            return []
        if len(out) == 1:
            return out if out[0] else []
        joined = b"".join(out)
        return [joined] if joined else []

    def feed(self, chunk: bytes) -> list[bytes]:
        """Bytes to send for ``chunk``: complete events only, at most one piece, never a lone
        ``b""``."""
        if self.error is not None:
            return [chunk] if chunk else []
        if not chunk:
            return []
        self._consumed += len(chunk)
        if self._markers is None or not self._lf_only or b"\r" in chunk:
            if self._lf_only:
                # CR line ends: the general framer from here on (it starts at a block boundary).
                self._lf_only = False
                if self._pending:
                    chunk = self._take_pending() + chunk
            return self._one(self._process(self._parser.feed_raw(chunk)))
        # The pending bytes hold no block boundary: search only the chunk (and the one place a
        # boundary can straddle: pending ends with LF, the chunk starts with LF).
        buf = self._pending
        cut = chunk.rfind(b"\n\n")
        if cut >= 0:
            end = cut + 2
        elif buf and buf[-1] == 0x0A and chunk[0] == 0x0A:
            end = 1
        else:
            buf += chunk
            return []
        if buf:
            region = b"".join((buf, memoryview(chunk)[:end]))
            buf.clear()
        else:
            region = chunk if end == len(chunk) else chunk[:end]
        if end != len(chunk):
            buf += memoryview(chunk)[end:]
        try:
            untouched = not self.holding() and not self._marked(region)
        except Exception:  # _process contains it (and sends every byte)
            untouched = False
        if untouched:
            return [region]
        return self._one(self._process(_split_lf(region)))

    def unterminated(self) -> bytes:
        """The bytes after the last block boundary fed so far: a block not yet ended, which
        :meth:`finish` sends as it came (or reads as a last event: :attr:`READS_UNTERMINATED`)."""
        return bytes(self._pending) + self._parser.rest

    def finish(self) -> list[bytes]:
        """End of stream: blocks completed only by the end, then what is held
        (:meth:`at_end`), then the unterminated remainder."""
        out: list[bytes] = []
        if self.error is None:
            blocks = self._parser.feed_raw(self._take_pending()) if self._pending else []
            blocks += self._parser.close_raw()
            if type(self).READS_UNTERMINATED and (rest := self._parser.flush()).strip():
                blocks.append(rest)  # keeps its own (missing) terminator
            out = self._process(blocks)
            if self.error is None:
                try:
                    out.extend(self.at_end())
                except Exception as exc:
                    self.error = f"{type(exc).__name__}: {exc}"
                    out.extend(self.held())
        out.append(self._parser.flush())
        out.append(self._take_pending())
        return self._one(out)
