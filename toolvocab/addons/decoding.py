"""Incremental content decoding of a streamed answer.

toolvocab asks the upstream for ``accept-encoding: identity`` on every request it may rewrite
(``core.py``); an upstream that compresses its event stream anyway would otherwise hand the
stream callable bytes it cannot read (mitmproxy passes a streamed body as it came: G5 in
docs/references.md), and an alias given to a rejected name would reach the client. A
:class:`StreamDecoder` turns such a body back into what the upstream compressed, a chunk at a
time, so the stream is read like any other and the client gets it decoded (identity is always
acceptable to a client: RFC 9110 §12.5.3).

The codings are those mitmproxy decodes whole (``mitmproxy/net/encoding.py``): ``gzip`` (and
``x-gzip``; several members in a row, RFC 1952 §2.2), ``deflate`` (a zlib stream, RFC 1950, or
the raw deflate some servers send, RFC 1951, told apart by the first two bytes), ``br``
(RFC 7932) and ``zstd`` (RFC 8878; several frames in a row), and a list of them (``gzip, br``: decoded last
first, RFC 9110 §8.4; ``identity`` and empty entries skipped).
"""

from __future__ import annotations

import zlib
from typing import Any

import brotli  # a dependency of mitmproxy

# zstd as mitmproxy reads it (``mitmproxy/net/encoding.py``): the ``zstandard`` package under
# mitmproxy 11, the standard library's ``compression.zstd`` (Python 3.14, PEP 784) or its
# ``backports.zstd`` under mitmproxy 12. Each gives a decompressor with ``decompress``, ``eof``
# and ``unused_data``; with none, zstd is not read as it streams.
try:
    import zstandard

    def _zstd() -> Any:
        return zstandard.ZstdDecompressor().decompressobj()

    _ZSTD_ERRORS: tuple[type[Exception], ...] = (zstandard.ZstdError,)
except ImportError:  # mitmproxy 12
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found,no-redef]
        except ImportError:
            zstd = None

    def _zstd() -> Any:
        return zstd.ZstdDecompressor()

    _ZSTD_ERRORS = (zstd.ZstdError,) if zstd is not None else ()

_GZIP_MAGIC = b"\x1f\x8b"


def _is_zlib_header(head: bytes) -> bool:
    """Whether two bytes open a zlib stream (RFC 1950 §2.2: method 8, window ≤ 32 KiB, check
    bits making ``CMF * 256 + FLG`` a multiple of 31)."""
    cmf, flg = head[0], head[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf * 256 + flg) % 31 == 0


class DecodeError(ValueError):
    """Bytes that are not the coding: ``decoded``, what the chunk gave before them; ``rest``, the
    chunk's bytes from the first one not read (the whole chunk when that is not known)."""

    def __init__(self, message: str, decoded: bytes, rest: bytes) -> None:
        super().__init__(message)
        self.decoded = decoded
        self.rest = rest


class StreamDecoder:
    """One body's decoder: :meth:`decode` each chunk as it comes, in order; :attr:`finished`
    once the last member or frame read so far ended (a body that stops short of that was cut).

    :meth:`decode` returns the bytes decoded so far (``b""`` while a header or block is
    incomplete) and raises :class:`DecodeError` for bytes that are not the coding (the rest of
    the body cannot be read either: call it no more)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.finished = False
        #: a member or frame ended and nothing of another has decoded since (bytes failing now
        #: follow the body's end: padding, junk, a broken next member)
        self.after_end = False
        self.members = 1  # gzip members or zstd frames begun so far
        self._rest = b""
        self._head = b""  # deflate: the first bytes, until two tell zlib from raw
        self._obj: Any = None
        if coding in ("gzip", "x-gzip"):
            self._obj = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "br":
            self._obj = brotli.Decompressor()
        elif coding == "zstd" and _ZSTD_ERRORS:
            self._obj = _zstd()
        elif coding != "deflate":
            raise ValueError(f"not a coding read as it streams: {coding!r}")

    def decode(self, data: bytes) -> bytes:
        out: list[bytes] = []
        self._rest = data  # the bytes not read yet, for an error's ``rest``
        try:
            self._decode(data, out)
        except DecodeError:
            raise
        except (zlib.error, brotli.error, *_ZSTD_ERRORS, EOFError) as exc:
            raise DecodeError(f"{self.coding}: {exc}", b"".join(out), self._rest) from exc
        return b"".join(out)

    def _decode(self, data: bytes, out: list[bytes]) -> None:
        if self.coding == "br":
            if self.finished and data:
                raise DecodeError("br: data after the end of the stream", b"", data)
            out.append(self._obj.process(data))
            self.finished = self.after_end = self._obj.is_finished()
            return
        if self._obj is None:  # deflate: which kind is known from the first two bytes
            self._head += data
            if len(self._head) < 2:
                return
            data, self._head = self._head, b""
            self._obj = zlib.decompressobj(zlib.MAX_WBITS if _is_zlib_header(data) else -zlib.MAX_WBITS)
        while data:
            if self.finished:
                # the next gzip member or zstd frame; deflate has one stream only
                if self.coding == "deflate" or (
                    self.coding != "zstd" and not data.startswith(_GZIP_MAGIC[: len(data)])
                ):
                    raise DecodeError(f"{self.coding}: data after the end of the stream", b"".join(out), data)
                self._obj = _zstd() if self.coding == "zstd" else zlib.decompressobj(16 + zlib.MAX_WBITS)
                self.finished = False
                self.members += 1
            self._rest = data
            out.append(self._obj.decompress(data))
            self.finished = self._obj.eof
            self.after_end = self.finished or (self.after_end and not out[-1])
            data = self._obj.unused_data if self.finished else b""


class Codings:
    """The decoders of a ``content-encoding`` list, applied last coding first (RFC 9110 §8.4):
    :meth:`decode` and :attr:`finished` as :class:`StreamDecoder`'s; ``coding``: the list as
    read (``"gzip, br"``; ``"identity"`` when nothing is left to decode)."""

    def __init__(self, decoders: list[StreamDecoder]) -> None:
        self.decoders = decoders
        self.coding = ", ".join(d.coding for d in reversed(decoders)) or "identity"

    @property
    def finished(self) -> bool:
        return all(d.finished for d in self.decoders)

    @property
    def after_end(self) -> bool:
        """The outermost coding's :attr:`StreamDecoder.after_end` (``False`` for none)."""
        return bool(self.decoders) and self.decoders[0].after_end

    def decode(self, data: bytes) -> bytes:
        for i, decoder in enumerate(self.decoders):
            try:
                data = decoder.decode(data)
            except DecodeError as exc:
                # what decoded before the fault goes on through the later decoders, once
                decoded = exc.decoded
                try:
                    for later in self.decoders[i + 1 :]:
                        decoded = later.decode(decoded)
                except DecodeError:
                    decoded = b""
                raise DecodeError(str(exc), decoded, exc.rest if i == 0 else b"") from exc
        return data


def stream_decoder(content_encoding: str) -> Codings | None:
    """The decoders for a ``content-encoding`` header's value (case and spaces as sent), or
    ``None`` when one of its codings is not read as it streams (``compress``, an unknown
    token)."""
    names = [c.strip().lower() for c in content_encoding.split(",")]
    try:
        return Codings([StreamDecoder(c) for c in reversed(names) if c not in ("", "identity")])
    except ValueError:
        return None


def decode_whole(body: bytes, content_encoding: str) -> bytes:
    """What a stream of ``body`` under ``content_encoding`` gave the client as toolvocab decodes
    it (``stream.DecodedStream``): decoded; as it came when its first bytes are not the coding;
    what decoded before bytes that are not, which are dropped. ``body`` as it is for a coding
    not read here. For reading a saved upstream answer (redaction)."""
    decoder = stream_decoder(content_encoding)
    if decoder is None:
        return body
    try:
        return decoder.decode(body)
    except DecodeError as exc:
        return exc.decoded or body


def decode_leniently(body: bytes, content_encoding: str) -> bytes | None:
    """``body`` decoded only where a client's decoder reads it the same way (httpx's, the
    official Python SDKs': one gzip member or zstd frame, gzip and deflate ignoring bytes after
    their end, a cut gzip trailer not checked, a list of codings), or ``None``: its first bytes
    are not the coding, it has several members or frames (httpx reads the first, other clients
    every one), bytes follow the end of a br or zstd stream (httpx refuses them), or a coding is
    not read here."""
    decoder = stream_decoder(content_encoding)
    if decoder is None:
        return None
    try:
        decoded = decoder.decode(body)
    except DecodeError as exc:
        outer = decoder.decoders[0] if decoder.decoders else None
        if not exc.decoded or outer is None or not outer.after_end or outer.coding in ("br", "zstd"):
            return None
        decoded = exc.decoded
    return decoded if all(d.members == 1 for d in decoder.decoders) else None
