"""SPDY/3.1 framing: frames cut from any split of the stream, header blocks through one
compression context per direction, the draft's dictionary, malformed input refused."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.node import spdy


def test_the_dictionary_is_the_drafts() -> None:
    """1423 bytes (section 2.6.10.1), its words length-prefixed, ending with `enq=0.`; a peer
    checks its Adler-32 (the zlib header's DICTID) before it inflates anything."""
    assert len(spdy.DICTIONARY) == 1423
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b"charset=iso-8859-1,utf-,*,enq=0.")
    block = spdy.HeaderCodec().encode({"streamtype": ["error"]})
    assert block[:2] == b"\x78\xf9"  # deflate, 32K window, level 9, FDICT set
    assert struct.unpack("!I", block[2:6])[0] == zlib.adler32(spdy.DICTIONARY)


def test_frames_are_cut_from_any_split() -> None:
    stream = (
        spdy.syn_stream(1, b"abc")
        + spdy.data_frame(1, b"hello")
        + spdy.data_frame(3, b"", fin=True)
        + spdy.control_frame(spdy.PING, 0, b"\x00\x00\x00\x01")
    )
    for cut in range(len(stream) + 1):
        parser = spdy.FrameParser()
        frames = parser.feed(stream[:cut]) + parser.feed(stream[cut:])
        assert frames == [
            spdy.ControlFrame(spdy.SYN_STREAM, 0, b"\x00\x00\x00\x01" + b"\x00" * 6 + b"abc"),
            spdy.DataFrame(1, 0, b"hello"),
            spdy.DataFrame(3, spdy.FLAG_FIN, b""),
            spdy.ControlFrame(spdy.PING, 0, b"\x00\x00\x00\x01"),
        ]
    assert isinstance(frames[2], spdy.DataFrame) and frames[2].fin


@given(st.lists(st.tuples(st.integers(1, 2**31 - 1), st.binary(max_size=300), st.booleans())))
def test_data_frames_round_trip(frames: list[tuple[int, bytes, bool]]) -> None:
    parser = spdy.FrameParser()
    stream = b"".join(spdy.data_frame(i, data, fin=fin) for i, data, fin in frames)
    got = [parser.feed(stream[i : i + 7]) for i in range(0, len(stream), 7)]
    assert [(f.stream_id, f.data, f.fin) for part in got for f in part] == frames  # type: ignore[union-attr]


def test_syn_stream_and_reply_layouts() -> None:
    frame = spdy.FrameParser().feed(spdy.syn_stream(5, b"block", fin=True))[0]
    assert isinstance(frame, spdy.ControlFrame) and frame.flags == spdy.FLAG_FIN
    syn = spdy.parse_syn_stream(frame)
    assert (syn.stream_id, syn.associated, syn.priority, syn.block) == (5, 0, 0, b"block")
    reply = spdy.syn_reply(5, b"hdrs")
    # control bit and version 3, type 2, no flags, length 4 + block
    assert reply == b"\x80\x03\x00\x02\x00\x00\x00\x08\x00\x00\x00\x05hdrs"
    assert spdy.goaway(7) == b"\x80\x03\x00\x07\x00\x00\x00\x08\x00\x00\x00\x07\x00\x00\x00\x00"
    assert spdy.rst_stream(3, 5)[-8:] == b"\x00\x00\x00\x03\x00\x00\x00\x05"


def test_header_blocks_share_one_context_per_direction() -> None:
    """A client's blocks (one zlib stream, sync-flushed) decode in order on the server."""
    client, server = spdy.HeaderCodec(), spdy.HeaderCodec()
    blocks = [
        client.encode({"streamtype": ["error"]}),
        client.encode({"streamtype": ["stdin"]}),
        client.encode({"StreamType": ["stdout"], "x": ["a", "b"]}),
        client.encode({}),
    ]
    assert [server.decode(b) for b in blocks] == [
        {"streamtype": ["error"]},
        {"streamtype": ["stdin"]},
        {"streamtype": ["stdout"], "x": ["a", "b"]},
        {},
    ]


def test_malformed_input_is_refused() -> None:
    with pytest.raises(spdy.SpdyError, match="unsupported SPDY version 2"):
        spdy.FrameParser().feed(b"\x80\x02\x00\x01\x00\x00\x00\x00")
    with pytest.raises(spdy.SpdyError, match="exceeds"):
        spdy.FrameParser(max_length=10).feed(spdy.data_frame(1, b"x" * 11))
    with pytest.raises(spdy.SpdyError, match="cannot decompress"):
        spdy.HeaderCodec().decode(b"not zlib")
    truncated = zlib.compressobj(zdict=spdy.DICTIONARY)
    block = truncated.compress(b"\x00\x00\x00\x02\x00\x00\x00\x01a") + truncated.flush(
        zlib.Z_SYNC_FLUSH
    )
    with pytest.raises(spdy.SpdyError, match="malformed header block"):
        spdy.HeaderCodec().decode(block)
    with pytest.raises(spdy.SpdyError, match="too short"):
        spdy.parse_syn_stream(spdy.ControlFrame(spdy.SYN_STREAM, 0, b"\x00"))
