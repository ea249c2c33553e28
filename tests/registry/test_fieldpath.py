"""Sets of field paths in the FieldsV1 form: elements, order, algebra, the wire form."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.registry import fieldpath as fp
from inplace.registry.fieldpath import FieldsError, set_of

# --- elements ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("element", "expected"),
    [
        (fp.field("image"), "f:image"),
        (
            fp.field("kubectl.kubernetes.io/last-applied-configuration"),
            "f:kubectl.kubernetes.io/last-applied-configuration",
        ),
        (fp.key({"name": "main"}), 'k:{"name":"main"}'),
        # Key fields sorted by name, numbers as JSON numbers.
        (
            fp.key({"protocol": "TCP", "containerPort": 80}),
            'k:{"containerPort":80,"protocol":"TCP"}',
        ),
        (fp.key({"port": 443.0}), 'k:{"port":443}'),
        # Go's encoder escapes <, > and & (and leaves other characters as UTF-8).
        (fp.key({"name": "a<b>&c"}), 'k:{"name":"a\\u003cb\\u003e\\u0026c"}'),
        (fp.key({"name": "app-🚀"}), 'k:{"name":"app-🚀"}'),
        (fp.value("foregroundDeletion"), 'v:"foregroundDeletion"'),
        (fp.value(3), "v:3"),
        (fp.value(True), "v:true"),
        (fp.index(4), "i:4"),
    ],
)
def test_elements_serialize_as_upstream(element: str, expected: str) -> None:
    assert element == expected


@pytest.mark.parametrize(
    ("path", "printed"),
    [
        (("f:spec", "f:replicas"), ".spec.replicas"),
        (
            ("f:spec", "f:containers", 'k:{"name":"main"}', "f:image"),
            '.spec.containers[name="main"].image',
        ),
        (
            ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'),
            '.spec.ports[port=80,protocol="TCP"]',
        ),
        (("f:metadata", "f:finalizers", 'v:"orphan"'), '.metadata.finalizers[="orphan"]'),
        (("f:spec", "f:args", "i:2"), ".spec.args[2]"),
        (("f:metadata", "f:labels", "f:app"), ".metadata.labels.app"),
        ((fp.key({"name": 'say "hi"\n'}),), '[name="say \\"hi\\"\\n"]'),
    ],
)
def test_paths_print_as_upstream(path: tuple[str, ...], printed: str) -> None:
    assert fp.format_path(path) == printed


def test_element_order_is_fields_keys_values_indices() -> None:
    elements = [
        "i:2",
        'v:"b"',
        "v:true",
        "i:10",
        'k:{"name":"b"}',
        "v:1",
        "f:zeta",
        'k:{"name":"a"}',
        'v:"a"',
        "f:alpha",
        'k:{"port":443,"protocol":"UDP"}',
        'k:{"port":443,"protocol":"TCP"}',
        'k:{"port":80,"protocol":"TCP"}',
        ".",
    ]
    assert sorted(elements, key=fp.element_order) == [
        ".",
        "f:alpha",
        "f:zeta",
        'k:{"name":"a"}',
        'k:{"name":"b"}',
        'k:{"port":80,"protocol":"TCP"}',
        'k:{"port":443,"protocol":"TCP"}',
        'k:{"port":443,"protocol":"UDP"}',
        "v:1",  # numbers before strings before booleans, as value.Compare orders them
        'v:"a"',
        'v:"b"',
        "v:true",
        "i:2",
        "i:10",
    ]


# --- building, membership, iteration ------------------------------------------------------

A = ("f:a",)
AB = ("f:a", "f:b")
ABC = ("f:a", "f:b", "f:c")
AD = ("f:a", "f:d")
X = ("f:x",)


def test_insert_marks_members_and_parents_are_not_members() -> None:
    built = set_of(ABC, AD)
    assert built == {"f:a": {"f:b": {"f:c": {}}, "f:d": {}}}
    assert fp.has(built, ABC) and fp.has(built, AD)
    assert not fp.has(built, A) and not fp.has(built, AB) and not fp.has(built, ())
    both = set_of(AB, ABC)
    assert both == {"f:a": {"f:b": {".": {}, "f:c": {}}}}
    assert fp.has(both, AB) and fp.has(both, ABC)


def test_paths_iterate_members_first_then_children_in_order() -> None:
    built = set_of(("f:b", "f:x"), ("f:a",), ("f:b",), ("f:c", 'k:{"n":1}'), ("f:a", "f:z"))
    assert list(fp.paths(built)) == [
        ("f:a",),
        ("f:b",),
        ("f:a", "f:z"),
        ("f:b", "f:x"),
        ("f:c", 'k:{"n":1}'),
    ]


# --- algebra -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right", "union", "intersection", "difference", "recursive"),
    [
        # Disjoint leaves.
        ([A], [X], [A, X], [], [A], [A]),
        # A parent minus its child stays; a child minus its parent stays, except recursively.
        ([A], [AB], [A, AB], [], [A], [A]),
        ([AB], [A], [A, AB], [], [AB], []),
        ([ABC, AD], [AB], [AB, ABC, AD], [], [ABC, AD], [AD]),
        ([ABC, AD], [A], [A, ABC, AD], [], [ABC, AD], []),
        # Shared members.
        ([AB, AD], [AD, X], [AB, AD, X], [AD], [AB], [AB]),
        ([AB, ABC], [ABC], [AB, ABC], [ABC], [AB], [AB]),
    ],
)
def test_set_algebra_matches_upstream(
    left: list[tuple[str, ...]],
    right: list[tuple[str, ...]],
    union: list[tuple[str, ...]],
    intersection: list[tuple[str, ...]],
    difference: list[tuple[str, ...]],
    recursive: list[tuple[str, ...]],
) -> None:
    a, b = set_of(*left), set_of(*right)
    assert fp.union(a, b) == set_of(*union)
    assert fp.intersection(a, b) == set_of(*intersection)
    assert fp.difference(a, b) == set_of(*difference)
    assert fp.recursive_difference(a, b) == set_of(*recursive)


def test_operations_return_their_input_when_nothing_changes() -> None:
    a = set_of(ABC, AD)
    assert fp.union(a, {}) is a
    assert fp.union(a, set_of(AD)) is a
    assert fp.difference(a, set_of(X)) is a
    assert fp.difference(a, {}) is a
    assert fp.recursive_difference(a, set_of(("f:z", "f:y"))) is a


def test_leaves_drop_members_that_have_children() -> None:
    assert fp.leaves(set_of(A, AB, ABC, AD)) == set_of(ABC, AD)


# --- the wire form -----------------------------------------------------------------------


def test_fields_v1_is_written_in_upstream_order_with_the_member_mark_first() -> None:
    built = set_of(
        ("f:spec", "f:containers", 'k:{"name":"b"}'),
        ("f:spec", "f:containers", 'k:{"name":"b"}', "f:image"),
        ("f:spec", "f:containers", 'k:{"name":"a"}', "f:name"),
        ("f:metadata", "f:labels", "f:app"),
        ("f:metadata", "f:labels"),
    )
    assert orjson.dumps(fp.to_fields_v1(built)).decode() == (
        '{"f:metadata":{"f:labels":{".":{},"f:app":{}}},'
        '"f:spec":{"f:containers":{"k:{\\"name\\":\\"a\\"}":{"f:name":{}},'
        '"k:{\\"name\\":\\"b\\"}":{".":{},"f:image":{}}}}}'
    )


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        # Keys reordered and re-spelt, values re-serialized, duplicates merged.
        (
            {'k:{ "protocol":"UDP", "port":53}': {}, "v: 3": {}, "i:02": {}},
            {'k:{"port":53,"protocol":"UDP"}': {}, "v:3": {}, "i:2": {}},
        ),
        # A node whose children are all unknown element kinds is a member.
        ({"f:a": {"x:unknown": {}}}, {"f:a": {}}),
        ({"f:a": {".": {}, "f:b": {}}}, {"f:a": {".": {}, "f:b": {}}}),
        ({}, {}),
    ],
)
def test_client_fields_v1_is_made_canonical(written: dict[str, Any], canonical: Any) -> None:
    assert fp.canonical_fields_v1(written) == canonical


@pytest.mark.parametrize(
    "bad",
    [[], {"nocolon": {}}, {"f:a": []}, {"k:notjson": {}}, {"k:[1]": {}}, {"i:x": {}}, "x"],
)
def test_malformed_fields_v1_is_refused(bad: Any) -> None:
    with pytest.raises(FieldsError):
        fp.canonical_fields_v1(bad)


_names = st.sampled_from(["a", "b", "spec", "metadata", "lab/el", "ünï", 'q"t'])
_elements = st.one_of(
    _names.map(fp.field),
    st.fixed_dictionaries({"name": _names}).map(fp.key),
    st.fixed_dictionaries(
        {"port": st.integers(-3, 70000), "protocol": st.sampled_from(["TCP", "UDP"])}
    ).map(fp.key),
    st.one_of(st.integers(-5, 5), _names, st.booleans()).map(fp.value),
    st.integers(0, 20).map(fp.index),
)
_paths = st.lists(_elements, min_size=1, max_size=5).map(tuple)
_sets = st.lists(_paths, max_size=25).map(lambda paths: set_of(*paths))


@settings(max_examples=120, deadline=None)
@given(_sets)
def test_fields_v1_round_trips(original: fp.Set) -> None:
    wire = orjson.loads(orjson.dumps(fp.to_fields_v1(original)))
    decoded = fp.canonical_fields_v1(wire)
    assert decoded == original
    assert fp.to_fields_v1(decoded) == fp.to_fields_v1(original)
    assert set_of(*fp.paths(decoded)) == original


@settings(max_examples=120, deadline=None)
@given(_sets, _sets)
def test_set_algebra_laws(a: fp.Set, b: fp.Set) -> None:
    members_a, members_b = set(fp.paths(a)), set(fp.paths(b))
    assert set(fp.paths(fp.union(a, b))) == members_a | members_b
    assert set(fp.paths(fp.intersection(a, b))) == members_a & members_b
    assert set(fp.paths(fp.difference(a, b))) == members_a - members_b
    below_b = {p for p in members_a if any(p[: len(q)] == q for q in members_b)}
    assert set(fp.paths(fp.recursive_difference(a, b))) == members_a - below_b
