"""The HTTP pieces handlers share: here, the patch type a PATCH's Content-Type names, and a
body sent in pieces."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inplace.apiserver.cache import PIECE
from inplace.apiserver.errors import StatusError
from inplace.apiserver.httputil import Pieces, json_response, patch_type_of, pieces_response


@pytest.mark.parametrize(
    ("content_type", "patch_type"),
    [
        ("application/json-patch+json", "json"),
        ("application/merge-patch+json", "merge"),
        ("application/strategic-merge-patch+json", "strategic"),
        ("application/apply-patch+yaml", "apply"),
        ("Application/Merge-Patch+JSON; charset=utf-8", "merge"),
    ],
)
def test_each_patch_media_type_names_its_patch(content_type: str, patch_type: str) -> None:
    assert patch_type_of(content_type) == patch_type


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", ""])
def test_any_other_media_type_is_unsupported(content_type: str) -> None:
    with pytest.raises(StatusError) as info:
        patch_type_of(content_type)
    assert info.value.code == 415
    assert info.value.message == (
        f"the body of the request was in an unknown format: {content_type.lower()}"
    )


class Writer:
    """What a payload writes through, recorded."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    async def write(self, chunk: Any) -> None:
        self.writes.append(bytes(chunk))


async def test_a_body_in_pieces_is_written_one_piece_at_a_time() -> None:
    pieces = Pieces([b'{"a":', b"[1,2", b"]}"])
    assert pieces.size == 11 and pieces.join() == b'{"a":[1,2]}'
    assert pieces.decode() == '{"a":[1,2]}' and await pieces.as_bytes() == b'{"a":[1,2]}'
    writer = Writer()
    await pieces.write(writer)  # type: ignore[arg-type]
    assert writer.writes == [b'{"a":', b"[1,2", b"]}"]
    writer = Writer()
    await pieces.write_with_length(writer, 7)  # type: ignore[arg-type]
    assert writer.writes == [b'{"a":', b"[1"]
    writer = Writer()
    await pieces.write_with_length(writer, None)  # type: ignore[arg-type]
    assert b"".join(writer.writes) == pieces.join()


def test_one_piece_is_sent_as_it_is() -> None:
    single = pieces_response([b"{}"])
    assert single.body == b"{}" and single.content_type == "application/json"
    several = pieces_response([b"[1", b",2]"])
    assert isinstance(several.body, Pieces) and several.body.join() == b"[1,2]"
    assert several.content_type == "application/json"


def test_a_large_json_answer_is_sent_in_pieces_of_its_encoding() -> None:
    body = {"items": ["x" * 1000] * (PIECE // 500)}
    response = json_response(body, status=201, warnings=("careful",))
    assert isinstance(response.body, Pieces)
    assert len(response.body.pieces) == 3 and response.body.join() == orjson.dumps(body)
    assert response.status == 201 and response.content_type == "application/json"
    assert response.headers.getall("Warning") == ['299 - "careful"']
    assert json_response({"a": 1}).body == b'{"a":1}'
