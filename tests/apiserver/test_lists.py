"""LIST: paging with continue tokens, selectors, server-side Tables."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.apiserver.errors import StatusError
from inplace.apiserver.lists import decode_continue, encode_continue, list_body, selector_filter
from inplace.registry.kinds import REGISTRY
from tests.apiserver.support import PODS, make_api, pod
from tests.conftest import InProcessServer

POD_KIND = REGISTRY.by_kind("", "Pod")


@given(revision=st.integers(min_value=0, max_value=2**62), key=st.text())
def test_a_continue_token_carries_its_revision_and_key(revision: int, key: str) -> None:
    assert decode_continue(encode_continue(revision, key)) == (revision, key)


@pytest.mark.parametrize("token", ["", "!!!", "e30=", "eyJydiI6IngifQ=="])
def test_a_foreign_continue_token_is_400(token: str) -> None:
    with pytest.raises(StatusError) as caught:
        decode_continue(token)
    assert caught.value.code == 400
    assert caught.value.message == "continue key is not valid: invalid token"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, None),
        ({"labelSelector": "app=a"}, ["a1", "a2"]),
        ({"labelSelector": "app!=a"}, ["b1"]),
        ({"fieldSelector": "metadata.name=a2"}, ["a2"]),
        ({"labelSelector": "app=a", "fieldSelector": "metadata.name!=a1"}, ["a2"]),
    ],
)
def test_selectors_become_one_predicate(query: dict[str, str], expected: list[str] | None) -> None:
    assert POD_KIND is not None
    objects = [
        {"metadata": {"name": name, "labels": {"app": name[0]}}} for name in ("a1", "a2", "b1")
    ]
    matches = selector_filter(POD_KIND, query)
    if expected is None:
        assert matches is None
    else:
        assert matches is not None
        assert [o["metadata"]["name"] for o in objects if matches(o)] == expected


def test_a_bad_selector_is_400_naming_it() -> None:
    assert POD_KIND is not None
    with pytest.raises(StatusError) as caught:
        selector_filter(POD_KIND, {"fieldSelector": "spec.bogus=1"})
    assert caught.value.code == 400 and "spec.bogus" in caught.value.message


def test_a_list_is_joined_from_stored_bytes() -> None:
    assert POD_KIND is not None
    body = list_body(POD_KIND, {"resourceVersion": "7"}, [b'{"a":1}', b'{"b":2}'])
    assert orjson.loads(body) == {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "7"},
        "items": [{"a": 1}, {"b": 2}],
    }


async def test_list_paging_and_selectors(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        for i in range(7):
            await api.call("POST", PODS, pod(f"p{i}", labels={"app": "t", "odd": str(i % 2)}))
        names: list[str] = []
        token = ""
        while True:
            status, page = await api.call(
                "GET", f"{PODS}?limit=3" + (f"&continue={token}" if token else "")
            )
            assert status == 200
            names += [item["metadata"]["name"] for item in page["items"]]
            token = page["metadata"].get("continue", "")
            if not token:
                break
        assert names == [f"p{i}" for i in range(7)]
        _, odd = await api.call("GET", f"{PODS}?labelSelector=odd%3D1")
        assert [p["metadata"]["name"] for p in odd["items"]] == ["p1", "p3", "p5"]
        _, by_name = await api.call("GET", f"{PODS}?fieldSelector=metadata.name%3Dp4")
        assert [p["metadata"]["name"] for p in by_name["items"]] == ["p4"]
        status, _ = await api.call("GET", f"{PODS}?fieldSelector=spec.bogus%3D1")
        assert status == 400
        status, table = await api.call(
            "GET", PODS, Accept="application/json;as=Table;v=v1;g=meta.k8s.io"
        )
        assert table["kind"] == "Table"
        assert [c["name"] for c in table["columnDefinitions"]][:5] == [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
        ]
        assert len(table["rows"]) == 7
