"""LIST: paging with continue tokens, selectors, server-side Tables."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.api.selectors import FieldSelector, LabelSelector
from inplace.apiserver import cache
from inplace.apiserver.cache import join_items
from inplace.apiserver.errors import StatusError
from inplace.apiserver.lists import (
    decode_continue,
    encode_continue,
    list_pieces,
    selected_name,
    selector_filter,
)
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
    pieces = list_pieces(POD_KIND, {"resourceVersion": "7"}, join_items([b'{"a":1}', b'{"b":2}']))
    assert pieces == [
        b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},'
        b'"items":[{"a":1},{"b":2}]}'
    ]


@given(
    sizes=st.lists(st.integers(min_value=2, max_value=40), max_size=30),
    piece=st.integers(min_value=1, max_value=100),
)
def test_a_list_in_pieces_is_the_list_joined_whole(sizes: list[int], piece: int) -> None:
    assert POD_KIND is not None
    raws = [b'"' + bytes([97 + i % 26]) * (size - 2) + b'"' for i, size in enumerate(sizes)]
    items = join_items(raws, piece)
    assert b"".join(items) == b",".join(raws)
    # every piece but the last is at least `piece` long, and none is longer than it needs be:
    # what it held before its last item was short of `piece` (commas aside; the items here
    # hold none), and an item is at most 40 bytes
    assert all(len(p) >= piece for p in items[:-1])
    assert all(len(p) - p.count(b",") < piece + 40 for p in items)
    pieces = list_pieces(POD_KIND, {"resourceVersion": "3", "continue": "x"}, items)
    assert b"".join(pieces) == orjson.dumps(
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "3", "continue": "x"},
            "items": [raw.decode().strip('"') for raw in raws],
        }
    )
    assert len(pieces) == max(len(items), 1)


LABELS = [
    None,
    {},
    {"app": "a"},
    {"app": "b", "tier": "web"},
    {"tier": "db", "n": "7"},
    {"n": "12", "app": "a"},
    {"n": "x"},
]
LABEL_SELECTORS = [
    "app=a",
    "app==a",
    "app!=a",
    "app in (a,b)",
    "app notin (a)",
    "tier",
    "!tier",
    "n>8",
    "n<8",
    "app=a,n>3",
    "app,tier!=db",
    "app in (a),!tier",
]


@pytest.mark.parametrize("text", LABEL_SELECTORS)
def test_label_checks_select_as_the_selector_does(text: str) -> None:
    assert POD_KIND is not None
    selector = LabelSelector.parse(text)
    matches = selector_filter(POD_KIND, {"labelSelector": text})
    assert matches is not None
    for labels in LABELS:
        metadata: dict[str, object] = {"name": "p"}
        if labels is not None:
            metadata["labels"] = labels
        assert matches({"metadata": metadata}) == selector.matches(labels), labels


@pytest.mark.parametrize(
    "text",
    [
        "spec.nodeName=n1",
        "spec.nodeName!=n1",
        "spec.nodeName=",
        "metadata.name=a,status.phase=Running",
        "status.phase!=Running,metadata.namespace=default",
    ],
)
def test_field_checks_select_as_the_selector_does(text: str) -> None:
    assert POD_KIND is not None
    fields = POD_KIND.strategy.selectable_fields
    selector = FieldSelector.parse(text, fields=fields)
    matches = selector_filter(POD_KIND, {"fieldSelector": text, "labelSelector": "app"})
    assert matches is not None
    for name in ("a", "b"):
        for node in (None, "n1", "n2"):
            for phase in (None, "Running", "Pending"):
                obj: dict[str, object] = {
                    "metadata": {"name": name, "namespace": "default", "labels": {"app": "x"}},
                    "spec": {"nodeName": node} if node else {},
                    "status": {"phase": phase} if phase else {},
                }
                assert matches(obj) == selector.matches(obj), obj


@pytest.mark.parametrize(
    ("selector", "name"),
    [
        ("", None),
        ("spec.nodeName=n", None),
        ("metadata.name=a", "a"),
        ("metadata.name==a,spec.nodeName=n", "a"),
        ("metadata.name!=a", None),
    ],
)
def test_the_name_a_field_selector_requires(selector: str, name: str | None) -> None:
    assert POD_KIND is not None
    assert selected_name(POD_KIND, {"fieldSelector": selector}) == name


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


async def test_a_list_in_pieces_is_byte_for_byte_the_objects_joined(
    apiserver: InProcessServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lists sent in several pieces (small ones here), kept between writes: each is the
    stored objects as a GET returns them, in key order, and follows every write."""
    monkeypatch.setattr(cache, "PIECE", 1500)
    api, session = await make_api(apiserver)

    async def raw(path: str) -> tuple[bytes, str]:
        async with session.get(apiserver.url + path, headers=apiserver.headers()) as response:
            assert response.status == 200
            body = await response.read()
            assert response.headers["Content-Length"] == str(len(body))
            assert response.headers["Content-Type"] == "application/json"
            return body, str(orjson.loads(body)["metadata"]["resourceVersion"])

    async def expected(path: str, names: list[tuple[str, str]]) -> None:
        body, rv = await raw(path)
        objects = [(await raw(f"/api/v1/namespaces/{ns}/pods/{name}"))[0] for ns, name in names]
        assert body == (
            b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"'
            + rv.encode()
            + b'"},"items":['
            + b",".join(objects)
            + b"]}"
        )

    async with session:
        await api.call("POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
        for name in ("p3", "p1", "p0", "p2", "p4"):
            status, _ = await api.call("POST", PODS, pod(name))
            assert status == 201
        await api.call("POST", "/api/v1/namespaces/other/pods", pod("p1"))
        default = [("default", f"p{i}") for i in range(5)]
        await expected(PODS, default)
        assert POD_KIND is not None
        assert (
            len(apiserver.server.cache.joined(POD_KIND, "default")) == 5
        )  # pieces        await expected(PODS, default)  # the kept join
        await expected("/api/v1/pods", [*default, ("other", "p1")])
        await api.call(
            "PATCH",
            f"{PODS}/p2",
            {"metadata": {"labels": {"app": "changed"}}},
            "application/merge-patch+json",
        )
        await api.call("DELETE", f"{PODS}/p0")
        await api.call("POST", PODS, pod("p10"))
        default = [("default", name) for name in ("p1", "p10", "p2", "p3", "p4")]
        await expected(PODS, default)
        await expected("/api/v1/pods", [*default, ("other", "p1")])
        _, changed = await api.call("GET", f"{PODS}?labelSelector=app%3Dchanged")
        assert [p["metadata"]["name"] for p in changed["items"]] == ["p2"]
        assert (await raw(f"{PODS}?limit=2"))[0].count(b'"kind":"Pod"') == 2
        await expected(f"{PODS}?fieldSelector=metadata.name%3Dp3", [("default", "p3")])
        await expected(
            "/api/v1/pods?fieldSelector=metadata.name%3Dp1", [("default", "p1"), ("other", "p1")]
        )
        await expected(
            "/api/v1/pods?fieldSelector=metadata.name%3Dp1,metadata.namespace%3Dother",
            [("other", "p1")],
        )
        await expected(f"{PODS}?fieldSelector=metadata.name%3Dnone", [])
        _, namespaces = await api.call(
            "GET", "/api/v1/namespaces?fieldSelector=metadata.name%3Dother"
        )
        assert [n["metadata"]["name"] for n in namespaces["items"]] == ["other"]
