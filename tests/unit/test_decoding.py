"""The incremental content decoder of streamed answers (``toolvocab/addons/decoding.py``): over
generated bodies cut anywhere, decoding piece by piece gives what was compressed; bytes that are
not the coding raise :class:`DecodeError` and nothing else, keeping what decoded before them."""

from __future__ import annotations

import gzip
import os
import zlib

import brotli
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from mitmproxy.net import encoding

from toolvocab.addons.decoding import DecodeError
from toolvocab.addons.decoding import stream_decoder

EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "150"))


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


#: (header value, encoder of a list of parts: each part one gzip member or zstd frame where a
#: coding has several)
CODINGS = {
    "gzip": lambda parts: b"".join(gzip.compress(p) for p in parts),
    "x-gzip": lambda parts: b"".join(gzip.compress(p) for p in parts),
    "deflate": lambda parts: zlib.compress(b"".join(parts)),
    "deflate (raw)": lambda parts: _raw_deflate(b"".join(parts)),
    "br": lambda parts: brotli.compress(b"".join(parts)),
    "zstd": lambda parts: b"".join(encoding.encode(p, "zstd") for p in parts),
}

BODY = st.lists(st.binary(max_size=3000) | st.text(max_size=600).map(str.encode), min_size=1, max_size=4)


def cut(data: bytes, points: list[int]) -> list[bytes]:
    points = sorted({p % (len(data) + 1) for p in points})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


@pytest.mark.parametrize("coding", sorted(CODINGS))
@settings(max_examples=EXAMPLES, deadline=None)
@given(parts=BODY, points=st.lists(st.integers(min_value=0, max_value=10**6), max_size=12))
def test_decoding_in_pieces_gives_what_was_compressed(coding, parts, points):
    encoded = CODINGS[coding](parts)
    decoder = stream_decoder(coding.split(" ")[0])
    assert decoder is not None
    out = b"".join(decoder.decode(piece) for piece in cut(encoded, points))
    assert out == b"".join(parts)
    assert decoder.finished


@pytest.mark.parametrize("coding", sorted(CODINGS))
@settings(max_examples=EXAMPLES, deadline=None)
@given(parts=BODY, garbage=st.binary(min_size=1, max_size=64), at=st.integers(min_value=0, max_value=10**6))
def test_bytes_not_of_the_coding_raise_decode_error_only(coding, parts, garbage, at):
    """Garbage spliced into a body: each piece decodes or raises DecodeError, never another
    exception (the stream callable must not raise: mitmproxy G2), with the bytes not read attached.
    (Garbage may also decode as data: what comes out of it is not promised.)"""
    encoded = CODINGS[coding](parts)
    at %= len(encoded) + 1
    spliced = encoded[:at] + garbage + encoded[at:]
    decoder = stream_decoder(coding.split(" ")[0])
    fed = b""
    for piece in cut(spliced, [at, at + len(garbage)]):
        fed += piece
        try:
            decoder.decode(piece)
        except DecodeError as exc:
            assert isinstance(exc.decoded, bytes) and fed.endswith(exc.rest)
            break


def test_a_decode_error_keeps_what_decoded_before_it():
    plain = b"data: one\n\n" * 50
    decoder = stream_decoder("gzip")
    with pytest.raises(DecodeError) as info:
        decoder.decode(gzip.compress(plain) + b"not gzip")
    assert info.value.decoded == plain and info.value.rest == b"not gzip"


@pytest.mark.parametrize("value", ["compress", "x-unknown", "gzip, compress", "br, x-unknown"])
def test_codings_not_read_as_they_stream_have_no_decoder(value):
    assert stream_decoder(value) is None


@pytest.mark.parametrize("value", ["identity", "", "identity, ,identity"])
def test_no_coding_decodes_to_the_bytes_as_they_came(value):
    decoder = stream_decoder(value)
    assert decoder is not None and decoder.coding == "identity"
    assert decoder.decode(b"data: x\n\n") == b"data: x\n\n"


@settings(max_examples=EXAMPLES, deadline=None)
@given(parts=BODY, points=st.lists(st.integers(min_value=0, max_value=10**6), max_size=12))
def test_a_list_of_codings_decodes_last_first(parts, points):
    """``br, gzip``: br applied first, then gzip (RFC 9110 §8.4); ``identity`` entries skipped."""
    encoded = gzip.compress(brotli.compress(b"".join(parts)))
    decoder = stream_decoder("br, identity, GZIP")
    assert decoder is not None and decoder.coding == "br, gzip"
    assert b"".join(decoder.decode(piece) for piece in cut(encoded, points)) == b"".join(parts)
    assert decoder.finished


@pytest.mark.parametrize(
    "trailer", [b"\x00" * 8, b"junk", b"\x1f\x8b\x08\x00" + b"\x00" * 12], ids=["padding", "junk", "broken member"]
)
def test_bytes_after_the_end_are_told_from_a_body_that_stops_decoding(trailer):
    """A decoder says whether bytes that fail follow the end of a member (``after_end``: the
    body ended; a client's own decoder drops them) or broke one mid-way."""
    decoder = stream_decoder("gzip")
    with pytest.raises(DecodeError):
        decoder.decode(gzip.compress(b"data: one\n\n") + trailer)
    assert decoder.after_end
    decoder = stream_decoder("gzip")
    with pytest.raises(DecodeError):
        decoder.decode(gzip.compress(b"data: one\n\n" * 40)[:30] + bytes(range(256)))
    assert not decoder.after_end


@pytest.mark.parametrize("value", ["GZIP", " gzip ", "Br", "ZSTD"])
def test_the_header_value_is_read_without_case_or_spaces(value):
    assert stream_decoder(value) is not None


class _Inner:
    """What :class:`toolvocab.addons.stream.DecodedStream` hands its decoded bytes to: here, a
    list of them."""

    state = None

    def __init__(self) -> None:
        self.got: list[bytes] = []

    def __call__(self, data: bytes) -> list[bytes]:
        self.got.append(data)
        return [data] if data else []

    def heard(self) -> None:
        pass


def _gzip_named(data: bytes, name_size: int) -> bytes:
    """``data`` as one gzip member whose header carries a file name (FNAME) of ``name_size``
    bytes: a decoder gives nothing until the name ends (RFC 1952 §2.3.1)."""
    import io

    buf = io.BytesIO()
    with gzip.GzipFile(filename="n" * name_size, mode="wb", fileobj=buf, mtime=0) as fp:
        fp.write(data)
    return buf.getvalue()


def test_the_bytes_before_the_first_decoded_byte_are_kept_only_up_to_a_bound():
    """The bytes before the first decoded byte are kept to be read as they came should the
    first bytes not be the coding; a gzip header's name has no length bound. Past
    ``BEFORE_MAX`` they are not kept: bytes that then fail to decode end the stream for the
    client (nothing of the header reaches it), while a whole member still decodes."""
    from toolvocab.addons.decoding import stream_decoder as codings
    from toolvocab.addons.stream import DecodedStream

    size = DecodedStream.BEFORE_MAX + (1 << 18)
    member = _gzip_named(b"data: x\n\n", size)
    pieces = [member[k : k + 65536] for k in range(0, len(member), 65536)]
    inner = _Inner()
    stream = DecodedStream(inner, codings("gzip"), keep=False)
    for piece in pieces:
        stream(piece)
    stream(b"")
    assert b"".join(inner.got) == b"data: x\n\n"

    header = member[: 10 + size + 1]  # the header and its name, then bytes that are no deflate
    inner = _Inner()
    stream = DecodedStream(inner, codings("gzip"), keep=False)
    for k in range(0, len(header), 65536):
        stream(header[k : k + 65536])
    stream(b"\xff" * 64)
    assert b"".join(inner.got) == b""  # was: the 1.25 MiB header, then the junk, read as they came

    small = _gzip_named(b"data: x\n\n", 100)[: 10 + 101] + b"\xff" * 64
    inner = _Inner()
    stream = DecodedStream(inner, codings("gzip"), keep=False)
    stream(small)
    assert b"".join(inner.got) == small  # under the bound: read as it came, as before
