"""SPDY/3.1 framing: what kubectl's SPDY executor (moby/spdystream, client-go's
``httpstream/spdy``) sends and expects, for the server side of a remote-command session.

kubectl before 1.30 speaks only this, and later ones fall back to it when the WebSocket
upgrade fails. No library implements SPDY for asyncio, and the part a remote-command server
needs is small, so it is written here from the protocol's draft 3.1
(``https://www.chromium.org/spdy/spdy-protocol/spdy-protocol-draft3-1/``):

* **Frames.** A control frame is ``1 | version (15 bits, 3) | type (16) | flags (8) |
  length (24) | payload``; a data frame is ``0 | stream id (31) | flags (8) | length (24) |
  data``. Flag ``0x01`` (FIN) ends the sender's half of a stream.
* **Streams.** The client opens each with SYN_STREAM (stream id, associated stream id,
  priority, slot, header block) and waits for the server's SYN_REPLY (stream id, header
  block). RST_STREAM aborts one; GOAWAY ends the session; PING is echoed.
* **Header blocks** are ``count (32) | (length (32) | name | length (32) | value)*`` (several
  values of one name joined by NUL), compressed with zlib primed with the draft's dictionary
  (:data:`DICTIONARY`): one compression context per direction for the whole connection, each
  block ending with a sync flush.
* **Flow control.** spdystream neither sends nor honours WINDOW_UPDATE, so neither side
  enforces windows; SETTINGS and WINDOW_UPDATE are read and ignored.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DATA_LIMIT",
    "DICTIONARY",
    "FLAG_FIN",
    "GOAWAY",
    "PING",
    "RST_STREAM",
    "SETTINGS",
    "SYN_REPLY",
    "SYN_STREAM",
    "WINDOW_UPDATE",
    "ControlFrame",
    "DataFrame",
    "FrameParser",
    "HeaderCodec",
    "SpdyError",
    "SynStream",
    "control_frame",
    "data_frame",
    "goaway",
    "parse_syn_stream",
    "rst_stream",
    "syn_reply",
    "syn_stream",
]

VERSION: Final = 3
SYN_STREAM: Final = 1
SYN_REPLY: Final = 2
RST_STREAM: Final = 3
SETTINGS: Final = 4
PING: Final = 6
GOAWAY: Final = 7
HEADERS: Final = 8
WINDOW_UPDATE: Final = 9
FLAG_FIN: Final = 0x01
MAX_LENGTH: Final = (1 << 24) - 1
DATA_LIMIT: Final = 32 * 1024
"""The largest data frame this side sends."""
RST_PROTOCOL_ERROR: Final = 1
RST_CANCEL: Final = 5
GOAWAY_OK: Final = 0

_WORDS = (
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
)
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY: Final = (
    b"".join(struct.pack("!I", len(word)) + word.encode() for word in _WORDS) + _TAIL.encode()
)
"""The header-compression dictionary of SPDY draft 3 (section 2.6.10.1), 1423 bytes: the
draft's words, each prefixed with its length, then its run of common values."""


class SpdyError(Exception):
    """The peer broke the protocol (the session is ended)."""


@dataclass(frozen=True)
class ControlFrame:
    type: int
    flags: int
    payload: bytes


@dataclass(frozen=True)
class DataFrame:
    stream_id: int
    flags: int
    data: bytes

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


class FrameParser:
    """Cuts a byte stream into frames (fed as bytes arrive)."""

    def __init__(self, max_length: int = MAX_LENGTH) -> None:
        self._buffer = bytearray()
        self.max_length = max_length

    def feed(self, data: bytes) -> list[ControlFrame | DataFrame]:
        self._buffer += data
        frames: list[ControlFrame | DataFrame] = []
        while len(self._buffer) >= 8:
            first, flags_length = struct.unpack_from("!II", self._buffer)
            flags, length = flags_length >> 24, flags_length & 0xFFFFFF
            if length > self.max_length:
                raise SpdyError(f"frame of {length} bytes exceeds {self.max_length}")
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8 : 8 + length])
            del self._buffer[: 8 + length]
            if first & 0x80000000:
                version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
                if version != VERSION:
                    raise SpdyError(f"unsupported SPDY version {version}")
                frames.append(ControlFrame(kind, flags, payload))
            else:
                frames.append(DataFrame(first & 0x7FFFFFFF, flags, payload))
        return frames


def control_frame(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack("!HHI", 0x8000 | VERSION, kind, flags << 24 | len(payload)) + payload


def data_frame(stream_id: int, data: bytes, *, fin: bool = False) -> bytes:
    flags = FLAG_FIN if fin else 0
    return struct.pack("!II", stream_id & 0x7FFFFFFF, flags << 24 | len(data)) + data


class HeaderCodec:
    """Header blocks in one direction each: :meth:`encode` for what this side sends,
    :meth:`decode` for what it receives (each keeps its zlib context for the connection)."""

    def __init__(self) -> None:
        self._compressor = zlib.compressobj(
            9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY
        )
        self._decompressor = zlib.decompressobj(zdict=DICTIONARY)

    def encode(self, headers: Mapping[str, Sequence[str]]) -> bytes:
        block = bytearray(struct.pack("!I", len(headers)))
        for name, values in headers.items():
            encoded_name = name.lower().encode()
            value = "\0".join(values).encode()
            block += struct.pack("!I", len(encoded_name)) + encoded_name
            block += struct.pack("!I", len(value)) + value
        return self._compressor.compress(bytes(block)) + self._compressor.flush(zlib.Z_SYNC_FLUSH)

    def decode(self, compressed: bytes) -> dict[str, list[str]]:
        try:
            block = self._decompressor.decompress(compressed)
        except zlib.error as exc:
            raise SpdyError(f"cannot decompress a header block: {exc}") from None
        try:
            (count,) = struct.unpack_from("!I", block)
            offset = 4
            headers: dict[str, list[str]] = {}
            for _ in range(count):
                (size,) = struct.unpack_from("!I", block, offset)
                name = block[offset + 4 : offset + 4 + size].decode()
                offset += 4 + size
                (size,) = struct.unpack_from("!I", block, offset)
                value = block[offset + 4 : offset + 4 + size].decode()
                offset += 4 + size
                headers.setdefault(name.lower(), []).extend(value.split("\0"))
        except (struct.error, UnicodeDecodeError) as exc:
            raise SpdyError(f"malformed header block: {exc}") from None
        return headers


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    associated: int
    priority: int
    block: bytes
    """The compressed header block."""


def parse_syn_stream(frame: ControlFrame) -> SynStream:
    if len(frame.payload) < 10:
        raise SpdyError("SYN_STREAM frame too short")
    stream_id, associated, priority = struct.unpack_from("!IIB", frame.payload)
    return SynStream(
        stream_id & 0x7FFFFFFF, associated & 0x7FFFFFFF, priority >> 5, frame.payload[10:]
    )


def syn_stream(stream_id: int, block: bytes, *, fin: bool = False) -> bytes:
    """A client's SYN_STREAM (what the tests' client sends)."""
    payload = struct.pack("!IIBB", stream_id, 0, 0, 0) + block
    return control_frame(SYN_STREAM, FLAG_FIN if fin else 0, payload)


def syn_reply(stream_id: int, block: bytes, *, fin: bool = False) -> bytes:
    return control_frame(SYN_REPLY, FLAG_FIN if fin else 0, struct.pack("!I", stream_id) + block)


def rst_stream(stream_id: int, status: int) -> bytes:
    return control_frame(RST_STREAM, 0, struct.pack("!II", stream_id, status))


def goaway(last_good_stream_id: int, status: int = GOAWAY_OK) -> bytes:
    return control_frame(GOAWAY, 0, struct.pack("!II", last_good_stream_id, status))
