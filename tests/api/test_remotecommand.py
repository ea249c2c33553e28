"""The remote-command protocols without I/O: negotiation, options, messages, statuses, sizes."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.api.remotecommand import (
    SPDY_PROTOCOLS,
    WEBSOCKET_PROTOCOLS,
    ChannelMessage,
    CloseSignal,
    ExecOptions,
    ResizeDecoder,
    StreamOptions,
    decode_message,
    encode_message,
    exec_options,
    exit_status,
    internal_error_status,
    negotiate,
    node_query,
    parse_bool,
    status_text,
    stream_options,
    success_status,
    translated_exit_status,
)

V5 = WEBSOCKET_PROTOCOLS["v5.channel.k8s.io"]
V4 = WEBSOCKET_PROTOCOLS["v4.channel.k8s.io"]
V4_BASE64 = WEBSOCKET_PROTOCOLS["v4.base64.channel.k8s.io"]
V1 = WEBSOCKET_PROTOCOLS["channel.k8s.io"]


@pytest.mark.parametrize(
    ("offered", "supported", "chosen"),
    [
        (["v5.channel.k8s.io"], WEBSOCKET_PROTOCOLS, "v5.channel.k8s.io"),
        # the client's order wins, whatever the server prefers
        (["v4.channel.k8s.io", "v5.channel.k8s.io"], WEBSOCKET_PROTOCOLS, "v4.channel.k8s.io"),
        (["v5.channel.k8s.io, v4.channel.k8s.io"], WEBSOCKET_PROTOCOLS, "v5.channel.k8s.io"),
        (["v9.channel.k8s.io", " channel.k8s.io"], WEBSOCKET_PROTOCOLS, "channel.k8s.io"),
        (["v9.channel.k8s.io"], WEBSOCKET_PROTOCOLS, None),
        # kubectl's SPDY offer: several headers, newest first
        (
            ["v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"],
            SPDY_PROTOCOLS,
            "v4.channel.k8s.io",
        ),
        (["v5.channel.k8s.io"], SPDY_PROTOCOLS, None),
        ([], SPDY_PROTOCOLS, None),
    ],
)
def test_negotiate(offered: list[str], supported: dict[str, object], chosen: str | None) -> None:
    assert negotiate(offered, supported) == chosen


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], False),
        (["0"], False),
        (["false"], False),
        (["FALSE"], False),
        (["true"], True),
        (["1"], True),
        (["yes"], True),
        ([""], True),
        (["false", "true"], False),
    ],
)
def test_parse_bool_as_upstream_converts_query_booleans(values: list[str], expected: bool) -> None:
    assert parse_bool(values) is expected


def test_exec_options_from_kubectls_query() -> None:
    query = [
        ("command", "sh"),
        ("command", "-c"),
        ("command", "echo $$"),
        ("container", "main"),
        ("stdin", "true"),
        ("stdout", "true"),
        ("stderr", "true"),
        ("tty", "false"),
    ]
    options = exec_options(query)
    assert options == ExecOptions("main", ("sh", "-c", "echo $$"), True, True, True, False)
    assert node_query(options) == [
        ("input", "1"),
        ("output", "1"),
        ("error", "1"),
        ("command", "sh"),
        ("command", "-c"),
        ("command", "echo $$"),
    ]
    assert exec_options([]) == ExecOptions("", (), False, False, False, False)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"output": "1"}, StreamOptions(False, True, False, False)),
        ({"input": "1", "error": "1"}, StreamOptions(True, False, True, False)),
        # a terminal merges stderr into stdout (kubelet's NewOptions)
        (
            {"input": "1", "output": "1", "error": "1", "tty": "1"},
            StreamOptions(True, True, False, True),
        ),
        # the node's query uses 1; anything else is false there
        ({"output": "true", "error": "1"}, StreamOptions(False, False, True, False)),
    ],
)
def test_stream_options(query: dict[str, str], expected: StreamOptions) -> None:
    assert stream_options(query.items()) == expected


@pytest.mark.parametrize("query", [{}, {"tty": "1"}, {"error": "1", "tty": "1"}])
def test_stream_options_need_a_stream(query: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="you must specify at least 1 of stdin, stdout, stderr"):
        stream_options(query.items())


@pytest.mark.parametrize(
    ("protocol", "message", "expected"),
    [
        (V5, b"\x00hello", ChannelMessage(0, b"hello")),
        (V5, b"\x04{}", ChannelMessage(4, b"{}")),
        (V5, b"\xff\x00", CloseSignal(0)),
        (V5, b"", None),
        # version 4 has no close signal: 255 is just a channel nobody serves
        (V4, b"\xff\x00", ChannelMessage(255, b"\x00")),
        (V4_BASE64, b"0aGVsbG8=", ChannelMessage(0, b"hello")),
        (V4_BASE64, b"0!!!", None),
        (V1, b"\x00x", ChannelMessage(0, b"x")),
    ],
)
def test_decode_message(
    protocol: object, message: bytes, expected: ChannelMessage | CloseSignal | None
) -> None:
    assert decode_message(protocol, message) == expected  # type: ignore[arg-type]


def test_a_close_signal_names_exactly_one_channel() -> None:
    with pytest.raises(ValueError, match="Single channel byte should follow stream close signal"):
        decode_message(V5, b"\xff\x00\x01")


def test_encode_message() -> None:
    assert encode_message(V5, 1, b"out") == b"\x01out"
    assert encode_message(V4_BASE64, 2, b"err") == "2ZXJy"
    assert encode_message(V4, 3, b"") == b"\x03"


@given(st.sampled_from([V5, V4, V4_BASE64, V1]), st.integers(0, 4), st.binary(max_size=64))
def test_messages_round_trip(protocol: object, channel: int, data: bytes) -> None:
    encoded = encode_message(protocol, channel, data)  # type: ignore[arg-type]
    raw = encoded.encode() if isinstance(encoded, str) else encoded
    assert decode_message(protocol, raw) == ChannelMessage(channel, data)  # type: ignore[arg-type]


def test_statuses_as_upstream_serializes_them() -> None:
    """metav1.Status as Go's encoder writes it: no kind/apiVersion, an empty metadata,
    StatusCause.Type serialized as `reason`."""
    assert orjson.dumps(success_status()) == b'{"metadata":{},"status":"Success"}'
    assert orjson.dumps(exit_status(3, ["sh", "-c", "exit 3"])) == (
        b'{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit '
        b'code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode",'
        b'"details":{"causes":[{"reason":"ExitCode","message":"3"}]}}'
    )
    assert translated_exit_status(2)["message"] == (
        "command terminated with non-zero exit code: command terminated with exit code 2"
    )
    assert internal_error_status("boom") == {
        "metadata": {},
        "status": "Failure",
        "message": "Internal error occurred: boom",
        "reason": "InternalError",
        "details": {"causes": [{"message": "boom"}]},
        "code": 500,
    }


def test_status_text_for_protocols_before_v4() -> None:
    assert status_text(success_status()) == b""
    assert status_text(exit_status(1, ["false"])).startswith(b"command terminated")


def test_resize_decoder_reads_a_stream_of_objects() -> None:
    sizes = ResizeDecoder()
    assert sizes.feed(b'{"Width":80,"Height":24}\n') == [(80, 24)]
    # split anywhere, several in one message, any case (Go's decoder)
    assert sizes.feed(b'{"Width":100,"He') == []
    assert sizes.feed(b'ight":40}\n{"width":1,"height":2}\n') == [(100, 40), (1, 2)]
    # a malformed line is skipped, what follows still counts
    assert sizes.feed(b'{"Width": nope}\n{"Width":5,"Height":6}\n') == [(5, 6)]
    # not an object, or not numbers: nothing
    assert sizes.feed(b'[1,2]\n{"Width":"80","Height":24}\n') == []
    assert sizes.feed(b'{"Width":70000,"Height":-3}\n') == [(65535, 0)]


@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 500)), max_size=5), st.data())
def test_resize_decoder_any_split(sizes: list[tuple[int, int]], data: st.DataObject) -> None:
    stream = b"".join(json.dumps({"Width": w, "Height": h}).encode() + b"\n" for w, h in sizes)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    decoder = ResizeDecoder()
    got: list[tuple[int, int]] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        got += decoder.feed(stream[start:cut])
        start = cut
    assert got == sizes
