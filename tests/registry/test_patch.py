"""Tests for JSON patch (RFC 6902), merge patch (RFC 7386) and strategic merge patch.

Strategic-merge cases marked "upstream" are transcribed from apimachinery's
pkg/util/strategicpatch/patch_test.go, run against a schema equivalent to its `MergeItem` test
struct; the rest use the real Pod/Deployment metadata from `inplace.registry.patchmeta`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.registry.patch import (
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    create_merge_patch,
    json_equal,
)
from inplace.registry.patchmeta import FieldPatchMeta, PatchSchema

# --------------------------------------------------------------------------- RFC 6902 appendix A

RFC6902_CASES: list[tuple[str, Any, list[dict[str, Any]], Any]] = [
    (
        "A.1 adding an object member",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux"}],
        {"baz": "qux", "foo": "bar"},
    ),
    (
        "A.2 adding an array element",
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    (
        "A.3 removing an object member",
        {"baz": "qux", "foo": "bar"},
        [{"op": "remove", "path": "/baz"}],
        {"foo": "bar"},
    ),
    (
        "A.4 removing an array element",
        {"foo": ["bar", "qux", "baz"]},
        [{"op": "remove", "path": "/foo/1"}],
        {"foo": ["bar", "baz"]},
    ),
    (
        "A.5 replacing a value",
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        "A.6 moving a value",
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        "A.7 moving an array element",
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        "A.8 testing a value: success",
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        "A.10 adding a nested member object",
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        "A.11 ignoring unrecognized elements",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    (
        "A.14 ~ escape ordering",
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": 10}],
        {"/": 9, "~1": 10},
    ),
    (
        "A.16 adding an array value",
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
    # Beyond the appendix.
    ("replace the whole document", {"a": 1}, [{"op": "replace", "path": "", "value": [1]}], [1]),
    (
        "add at the root replaces it",
        {"a": 1},
        [{"op": "add", "path": "", "value": {"b": 2}}],
        {"b": 2},
    ),
    (
        "copy is a copy, not an alias",
        {"a": {"b": 1}},
        [
            {"op": "copy", "from": "/a", "path": "/c"},
            {"op": "replace", "path": "/c/b", "value": 2},
        ],
        {"a": {"b": 1}, "c": {"b": 2}},
    ),
    (
        "escaped slash in a key",
        {"a/b": {"m~n": 1}},
        [{"op": "replace", "path": "/a~1b/m~0n", "value": 2}],
        {"a/b": {"m~n": 2}},
    ),
    (
        "append then test with '-'-added value",
        {"xs": []},
        [
            {"op": "add", "path": "/xs/-", "value": 1},
            {"op": "add", "path": "/xs/0", "value": 0},
            {"op": "test", "path": "/xs", "value": [0, 1]},
        ],
        {"xs": [0, 1]},
    ),
    (
        "move to the same place is a no-op",
        {"a": 1},
        [{"op": "move", "from": "/a", "path": "/a"}],
        {"a": 1},
    ),
    (
        "test compares numbers numerically",
        {"n": 1},
        [{"op": "test", "path": "/n", "value": 1.0}],
        {"n": 1},
    ),
    (
        "null values are values",
        {"a": None},
        [{"op": "test", "path": "/a", "value": None}, {"op": "replace", "path": "/a", "value": 0}],
        {"a": 0},
    ),
]


@pytest.mark.parametrize(
    ("doc", "ops", "expected"), [c[1:] for c in RFC6902_CASES], ids=[c[0] for c in RFC6902_CASES]
)
def test_json_patch(doc: Any, ops: list[dict[str, Any]], expected: Any) -> None:
    before = copy.deepcopy(doc)
    assert apply_json_patch(doc, ops) == expected
    assert doc == before


JSON_PATCH_ERRORS: list[tuple[str, Any, list[Any], str]] = [
    (
        "A.9 testing a value: error",
        {"baz": "qux"},
        [{"op": "test", "path": "/baz", "value": "bar"}],
        "operation 0 (test /baz): test failed",
    ),
    (
        "A.12 adding to a nonexistent target",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz/bat", "value": "qux"}],
        "operation 0 (add /baz/bat): path '/baz/bat' does not exist",
    ),
    (
        "A.15 comparing strings and numbers",
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": "10"}],
        "operation 0 (test /~01): test failed",
    ),
    (
        "unknown op",
        {},
        [{"op": "frobnicate", "path": "/a"}],
        "operation 0 (frobnicate /a): unknown op",
    ),
    ("missing op", {}, [{"path": "/a"}], "operation 0 (None /a): unknown op"),
    ("missing path", {}, [{"op": "add", "value": 1}], 'missing "path"'),
    ("missing value", {}, [{"op": "add", "path": "/a"}], 'operation 0 (add /a): missing "value"'),
    ("missing from", {"a": 1}, [{"op": "move", "path": "/b"}], 'missing "from"'),
    ("pointer without slash", {"a": 1}, [{"op": "remove", "path": "a"}], "not a JSON pointer"),
    ("bad ~ escape", {"a": 1}, [{"op": "remove", "path": "/~2"}], 'invalid "~" escape'),
    ("remove missing member", {"a": 1}, [{"op": "remove", "path": "/b"}], "'/b' does not exist"),
    (
        "replace missing member",
        {"a": 1},
        [{"op": "replace", "path": "/b", "value": 1}],
        "'/b' does not exist",
    ),
    ("index out of range", {"a": [1]}, [{"op": "add", "path": "/a/2", "value": 1}], "out of range"),
    ("remove past the end", {"a": [1]}, [{"op": "remove", "path": "/a/1"}], "out of range"),
    (
        "leading zero index",
        {"a": [1, 2]},
        [{"op": "remove", "path": "/a/01"}],
        "'01' is not an array index",
    ),
    (
        "'-' outside add",
        {"a": [1]},
        [{"op": "remove", "path": "/a/-"}],
        "'-' is not an array index",
    ),
    ("remove the document", {"a": 1}, [{"op": "remove", "path": ""}], "cannot remove the whole"),
    (
        "move into own child",
        {"a": {"b": 1}},
        [{"op": "move", "from": "/a", "path": "/a/b/c"}],
        "into its own child",
    ),
    (
        "add below a scalar",
        {"a": 1},
        [{"op": "add", "path": "/a/b", "value": 1}],
        "not a container",
    ),
    ("test true is not 1", {"a": 1}, [{"op": "test", "path": "/a", "value": True}], "test failed"),
    ("operation not an object", {}, ["add"], "operation 0: must be an object"),
    (
        "all or nothing: a later failure",
        {"a": {"b": 1}, "xs": [1]},
        [
            {"op": "replace", "path": "/a/b", "value": 2},
            {"op": "add", "path": "/xs/-", "value": 2},
            {"op": "remove", "path": "/nope"},
        ],
        "operation 2 (remove /nope)",
    ),
]


@pytest.mark.parametrize(
    ("doc", "ops", "message"),
    [c[1:] for c in JSON_PATCH_ERRORS],
    ids=[c[0] for c in JSON_PATCH_ERRORS],
)
def test_json_patch_errors(doc: Any, ops: list[Any], message: str) -> None:
    before = copy.deepcopy(doc)
    with pytest.raises(PatchError, match=None) as info:
        apply_json_patch(doc, ops)
    assert message in str(info.value)
    assert doc == before


def test_json_patch_must_be_a_list() -> None:
    with pytest.raises(PatchError, match="array of operations"):
        apply_json_patch({}, {"op": "add"})


def test_json_patch_copies_only_the_touched_path() -> None:
    untouched = {"big": list(range(100))}
    doc = {"keep": untouched, "change": {"x": 1}}
    out = apply_json_patch(doc, [{"op": "replace", "path": "/change/x", "value": 2}])
    assert out["keep"] is untouched
    assert doc["change"] == {"x": 1}


# --------------------------------------------------------------------------- RFC 7386 appendix A

RFC7386_CASES: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_CASES)
def test_merge_patch_rfc7386(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert apply_merge_patch(target, patch) == expected
    assert target == before


@pytest.mark.parametrize(
    ("original", "modified", "patch"),
    [
        ({"a": 1, "b": 2}, {"a": 1, "b": 3}, {"b": 3}),
        ({"a": 1, "b": 2}, {"a": 1}, {"b": None}),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}, {"a": {"y": None}}),
        ({"a": [1, 2]}, {"a": [1, 2, 3]}, {"a": [1, 2, 3]}),
        ({"a": 1}, {"a": True}, {"a": True}),
        ({"a": {"x": 1}}, {"a": {"x": 1}}, {}),
        ({"a": 1}, [1], [1]),
    ],
)
def test_create_merge_patch(original: Any, modified: Any, patch: Any) -> None:
    assert create_merge_patch(original, modified) == patch
    assert apply_merge_patch(original, patch) == modified


# --------------------------------------------------------------------------- strategic: upstream


class FakeSchema(PatchSchema):
    """A schema over a hand-written table, standing in for upstream's MergeItem test struct."""

    TYPES: dict[str, dict[str, tuple[FieldPatchMeta | None, str | None]]] = {}

    def __init__(self, name: str | None) -> None:
        super().__init__(None)
        self.name = name

    def meta(self, field: str) -> FieldPatchMeta | None:
        return self.TYPES.get(self.name or "", {}).get(field, (None, None))[0]

    def child(self, field: str) -> PatchSchema:
        return FakeSchema(self.TYPES.get(self.name or "", {}).get(field, (None, None))[1])


def _meta(strategy: str, key: str | None = None) -> FieldPatchMeta:
    return FieldPatchMeta(frozenset(strategy.split(",")), key)


FakeSchema.TYPES = {
    "MergeItem": {
        "mergingList": (_meta("merge", "name"), "MergeItem"),
        "nonMergingList": (None, "MergeItem"),
        "mergingIntList": (_meta("merge"), None),
        "nonMergingIntList": (None, None),
        "mergeItemPtr": (_meta("merge", "name"), "MergeItem"),
        "simpleMap": (None, None),
        "replacingItem": (_meta("replace"), None),
        "retainKeysMap": (_meta("retainKeys"), "RetainKeysMergeItem"),
        "retainKeysMergingList": (_meta("merge,retainKeys", "name"), "MergeItem"),
    },
    "RetainKeysMergeItem": {
        "simpleMap": (None, None),
        "mergingIntList": (_meta("merge"), None),
        "mergingList": (_meta("merge", "name"), "MergeItem"),
        "nonMergingList": (None, "MergeItem"),
    },
}
MERGE_ITEM = FakeSchema("MergeItem")

# description, original, patch, expected (or "error: <substring>")
UPSTREAM_CASES = yaml.safe_load(
    """
- description: unique scalars when merging lists
  original: {mergingIntList: [1, 2]}
  patch: {mergingIntList: [2, 3]}
  expected: {mergingIntList: [1, 2, 3]}
- description: delete map from nested map
  original: {simpleMap: {key1: 1, key2: 1}}
  patch: {simpleMap: {$patch: delete}}
  expected: {simpleMap: {}}
- description: delete all items from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{$patch: replace}]}
  expected: {mergingList: []}
- description: merge empty merging lists
  original: {mergingList: []}
  patch: {mergingList: []}
  expected: {mergingList: []}
- description: delete all keys from map
  original: {name: 1, value: 1}
  patch: {$patch: replace}
  expected: {}
- description: add key and delete all keys from map
  original: {name: 1, value: 1}
  patch: {other: a, $patch: replace}
  expected: {other: a}
- description: delete all duplicate entries in a merging list
  original: {mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 3, $patch: delete}]}
  expected: {mergingList: [{name: 2, value: a}]}
- description: retainKeys map can add a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo}}
  patch: {retainKeysMap: {value: bar}}
  expected: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map can change a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {value: b}}
  expected: {retainKeysMap: {name: foo, value: b}}
- description: retainKeys map can delete a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {value: null}}
  expected: {retainKeysMap: {name: foo}}
- description: retainKeys map merge an empty map
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {}}
  expected: {retainKeysMap: {name: foo, value: a}}
- description: retainKeys list can add a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  patch: {retainKeysMergingList: [{name: foo, value: a}]}
  expected: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
- description: retainKeys list can change a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  patch: {retainKeysMergingList: [{name: foo, value: b}]}
  expected: {retainKeysMergingList: [{name: bar}, {name: foo, value: b}]}
- description: retainKeys list can delete a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  patch: {retainKeysMergingList: [{name: foo, value: null}]}
  expected: {retainKeysMergingList: [{name: bar}, {name: foo}]}
- description: preserve the order from the patch in a merging list
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]}
  expected:
    mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]
- description: preserve the order from the patch in a merging list 2
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}]}
  expected: {mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]}
- description: preserve the order from the patch in a merging int list
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1, 2]}
  expected: {mergingIntList: [3, 1, 2]}
- description: preserve the order from the patch in a merging int list 2
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1]}
  expected: {mergingIntList: [2, 3, 1]}
- description: $setElementOrder contains item that is not present in the list to be merged
  original: {mergingList: [{name: 1}, {name: 3}]}
  patch:
    $setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  expected: {mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}
- description: $setElementOrder contains item that is not present in the int list to be merged
  original: {mergingIntList: [1, 3]}
  patch: {$setElementOrder/mergingIntList: [3, 2, 1]}
  expected: {mergingIntList: [3, 1]}
- description: should check if order in $setElementOrder and patch list match
  original: {mergingList: [{name: 1}, {name: 3}, {name: 2}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  expected: "error: doesn't match"
- description: should check if order in $setElementOrder and patch int list match
  original: {mergingIntList: [1, 3, 2]}
  patch: {$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3, 1]}
  expected: "error: doesn't match"
- description: missing merge key should error out
  original: {mergingList: [{name: 1, value: a}]}
  patch: {mergingList: [{value: b}]}
  expected: "error: does not contain declared merge key"
- description: nil original
  original: {}
  patch: {name: 1, value: 1}
  expected: {name: 1, value: 1}
- description: nil original (three-way)
  original: {name: 1, other: a}
  patch: {value: 1}
  expected: {name: 1, value: 1, other: a}
- description: nil patch
  original: {name: 1}
  patch: {}
  expected: {name: 1}
- description: add field and delete field from map
  original: {name: 1}
  patch: {name: null, value: 1}
  expected: {value: 1}
- description: add field and delete field from map (three-way)
  original: {name: 1, other: a}
  patch: {name: null, value: 1}
  expected: {value: 1, other: a}
- description: delete field from nested map (three-way)
  original: {simpleMap: {key1: 1, key2: 1, other: a}}
  patch: {simpleMap: {key2: null}}
  expected: {simpleMap: {key1: 1, other: a}}
- description: delete all fields from map (three-way)
  original: {name: 1, value: 1, other: a}
  patch: {name: null, value: null}
  expected: {other: a}
- description: replace list of scalars
  original: {nonMergingIntList: [1, 2]}
  patch: {nonMergingIntList: [2, 3]}
  expected: {nonMergingIntList: [2, 3]}
- description: delete all maps from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  expected: {mergingList: []}
- description: delete all maps from merging list with conflict (three-way)
  original: {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  expected: {mergingList: []}
- description: delete all maps from empty merging list (three-way)
  original: {mergingList: []}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  expected: {mergingList: []}
- description: defined null values should propagate overwrite current fields
  original: {name: 2}
  patch: {name: 1, value: 1, other: null}
  expected: {name: 1, value: 1}
- description: defined null values should propagate removing original fields (three-way)
  original: {name: original-name, value: original-value, other: current-other}
  patch: {name: modified-name, value: null}
  expected: {name: modified-name, other: current-other}
- description: delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  patch: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  expected: {mergingIntList: [1, 2]}
- description: delete items in lists of scalars (three-way)
  original: {mergingIntList: [1, 2, 3, 4]}
  patch: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  expected: {mergingIntList: [1, 2, 4]}
- description: delete all duplicate items in lists of scalars (three-way)
  original: {mergingIntList: [1, 2, 3, 3, 4]}
  patch: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  expected: {mergingIntList: [1, 2, 4]}
- description: add and delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  patch:
    $setElementOrder/mergingIntList: [1, 2, 4]
    $deleteFromPrimitiveList/mergingIntList: [3]
    mergingIntList: [4]
  expected: {mergingIntList: [1, 2, 4]}
- description: add and delete items in lists of scalars (three-way)
  original: {mergingIntList: [1, 2, 3, 4]}
  patch:
    $setElementOrder/mergingIntList: [1, 2, 4]
    $deleteFromPrimitiveList/mergingIntList: [3]
  expected: {mergingIntList: [1, 2, 4]}
- description: merge lists of maps
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  patch:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  expected:
    mergingList: [{name: 4, value: 4}, {name: 1}, {name: 2, value: 2}, {name: 3, value: 3}]
- description: merge lists of maps (three-way)
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  expected:
    mergingList:
    - {name: 4, value: 4}
    - {name: 1, other: a}
    - {name: 2, value: 2, other: b}
    - {name: 3, value: 3}
- description: merge lists of maps with conflict (three-way)
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 3, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 2, value: 2}, {name: 3, value: 3}]
  expected:
    mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]
- description: add field to map in merging list (three-way)
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: 1}]
  expected: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]}
- description: merge lists of maps without $setElementOrder puts new items first
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{name: 3}]}
  expected: {mergingList: [{name: 3}, {name: 1}, {name: 2}]}
- description: nested merging lists merge by key at every level
  original:
    mergingList:
    - name: a
      mergingList: [{name: x, value: 1}, {name: y}]
  patch:
    mergingList:
    - name: a
      mergingList: [{name: x, value: 2}]
  expected:
    mergingList:
    - name: a
      mergingList: [{name: x, value: 2}, {name: y}]
- description: merging list nested in a non-merging list is replaced
  original: {nonMergingList: [{name: a, mergingList: [{name: x}]}]}
  patch: {nonMergingList: [{name: a, mergingList: [{name: y}]}]}
  expected: {nonMergingList: [{name: a, mergingList: [{name: y}]}]}
- description: replace strategy replaces the map
  original: {replacingItem: {a: 1, b: 2}}
  patch: {replacingItem: {a: 3}}
  expected: {replacingItem: {a: 3}}
- description: $patch replace inside a nested map
  original: {simpleMap: {key1: 1, key2: 1}}
  patch: {simpleMap: {$patch: replace, key3: 3}}
  expected: {simpleMap: {key3: 3}}
- description: $patch replace as a merging list item keeps the other patch items
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{name: 3, value: c}, {$patch: replace}]}
  expected: {mergingList: [{name: 3, value: c}]}
- description: $retainKeys on a retainKeys map clears unlisted keys
  original: {retainKeysMap: {name: foo, value: a, other: b}}
  patch: {retainKeysMap: {$retainKeys: [name, value], value: c}}
  expected: {retainKeysMap: {name: foo, value: c}}
- description: $retainKeys on items of a merge,retainKeys list
  original: {retainKeysMergingList: [{name: foo, value: a, other: b}, {name: bar, other: c}]}
  patch: {retainKeysMergingList: [{name: foo, $retainKeys: [name, other], other: d}]}
  expected: {retainKeysMergingList: [{name: foo, other: d}, {name: bar, other: c}]}
- description: $retainKeys must list every field the patch sets
  original: {retainKeysMap: {name: foo}}
  patch: {retainKeysMap: {$retainKeys: [name], value: c}}
  expected: "error: field 'value' is in the patch but not in $retainKeys"
- description: $retainKeys where the strategy has no retainKeys
  original: {simpleMap: {a: b}}
  patch: {simpleMap: {$retainKeys: [a]}}
  expected: "error: simpleMap: $retainKeys is only allowed"
- description: unknown $patch directive
  original: {simpleMap: {a: b}}
  patch: {simpleMap: {$patch: frobnicate}}
  expected: "error: simpleMap: unknown $patch directive 'frobnicate'"
- description: unknown $patch directive in a list item
  original: {mergingList: [{name: 1}]}
  patch: {mergingList: [{name: 1, $patch: frobnicate}]}
  expected: "error: mergingList: unknown $patch directive"
- description: $patch merge in a list item is rejected as upstream does
  original: {mergingList: [{name: 1}]}
  patch: {mergingList: [{name: 1, $patch: merge}]}
  expected: "error: cannot be used on a list item"
- description: $patch merge in a map is the default
  original: {simpleMap: {a: b}}
  patch: {simpleMap: {$patch: merge, c: d}}
  expected: {simpleMap: {a: b, c: d}}
- description: unknown directive key
  original: {}
  patch: {$frobnicate/x: [1]}
  expected: "error: unknown directive '$frobnicate/x'"
- description: $deleteFromPrimitiveList on a list of objects
  original: {mergingList: [{name: 1}]}
  patch: {$deleteFromPrimitiveList/mergingList: [1]}
  expected: "error: needs a merging list of primitives"
- description: $deleteFromPrimitiveList of an absent list does nothing
  original: {}
  patch: {$deleteFromPrimitiveList/mergingIntList: [1]}
  expected: {}
- description: directives in values the original lacks are resolved, not stored
  original: {}
  patch: {mergingList: [{name: 1, simpleMap: {a: null, b: c}}, {name: 2, $patch: delete}]}
  expected: {mergingList: [{name: 1, simpleMap: {b: c}}]}
- description: lists of mixed types cannot be merged
  original: {mergingIntList: [1]}
  patch: {mergingIntList: [{a: 1}]}
  expected: "error: not all of the same type"
- description: a value changing type is replaced
  original: {mergingList: [{name: 1}]}
  patch: {mergingList: {name: 1}}
  expected: {mergingList: {name: 1}}
"""
)


@pytest.mark.parametrize("case", UPSTREAM_CASES, ids=[c["description"] for c in UPSTREAM_CASES])
def test_strategic_merge_upstream(case: dict[str, Any]) -> None:
    original, patch, expected = case["original"], case["patch"], case["expected"]
    before, patch_before = copy.deepcopy(original), copy.deepcopy(patch)
    if isinstance(expected, str) and expected.startswith("error: "):
        with pytest.raises(PatchError) as info:
            apply_strategic_merge_patch(original, patch, MERGE_ITEM)
        assert expected.removeprefix("error: ") in str(info.value)
    else:
        assert apply_strategic_merge_patch(original, patch, MERGE_ITEM) == expected
    assert original == before
    assert patch == patch_before


# --------------------------------------------------------------------------- strategic: real kinds

POD_SCHEMA = PatchSchema("V1Pod")
DEPLOYMENT_SCHEMA = PatchSchema("V1Deployment")


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "x"}, "finalizers": ["a", "b"]},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "busybox",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                },
                {"name": "sidecar", "image": "envoy"},
            ],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "PodScheduled", "status": "True"},
            ]
        },
    }


def test_resize_patch_touches_only_one_container() -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    patch = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "2"}}}]}}
    out = apply_strategic_merge_patch(pod, patch, POD_SCHEMA)
    app, sidecar = out["spec"]["containers"]
    assert app["resources"] == {"requests": {"cpu": "2", "memory": "1Gi"}}
    assert app["env"] == before["spec"]["containers"][0]["env"]
    assert sidecar == before["spec"]["containers"][1]
    assert pod == before
    # Copy on write: untouched subtrees are shared, not copied.
    assert out["metadata"] is pod["metadata"]
    assert out["status"] is pod["status"]
    assert sidecar is pod["spec"]["containers"][1]


def test_new_container_goes_first_without_set_element_order() -> None:
    # The `kubectl patch` documentation example: the new container is listed first.
    out = apply_strategic_merge_patch(
        _pod(), {"spec": {"containers": [{"name": "redis", "image": "redis"}]}}, POD_SCHEMA
    )
    assert [c["name"] for c in out["spec"]["containers"]] == ["redis", "app", "sidecar"]


def test_set_element_order_places_new_container() -> None:
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}, {"name": "new"}],
            "containers": [{"name": "new", "image": "x"}],
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    assert [c["name"] for c in out["spec"]["containers"]] == ["app", "sidecar", "new"]


def test_delete_container_and_env_by_key() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "sidecar", "$patch": "delete"},
                {"name": "app", "env": [{"name": "A", "$patch": "delete"}]},
            ]
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    assert [c["name"] for c in out["spec"]["containers"]] == ["app"]
    assert out["spec"]["containers"][0]["env"] == [{"name": "B", "value": "2"}]


def test_atomic_lists_are_replaced() -> None:
    patch = {
        "spec": {
            "tolerations": [{"key": "other", "operator": "Exists"}],
            "containers": [{"name": "app", "resizePolicy": [{"resourceName": "memory"}]}],
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    assert out["spec"]["tolerations"] == [{"key": "other", "operator": "Exists"}]
    assert out["spec"]["containers"][0]["resizePolicy"] == [{"resourceName": "memory"}]


def test_finalizers_union_and_delete_from_primitive_list() -> None:
    out = apply_strategic_merge_patch(
        _pod(),
        {"metadata": {"finalizers": ["b", "c"], "$deleteFromPrimitiveList/finalizers": ["a"]}},
        POD_SCHEMA,
    )
    assert out["metadata"]["finalizers"] == ["b", "c"]


def test_labels_merge_and_delete() -> None:
    out = apply_strategic_merge_patch(
        _pod(), {"metadata": {"labels": {"app": None, "tier": "db"}}}, POD_SCHEMA
    )
    assert out["metadata"]["labels"] == {"tier": "db"}


def test_conditions_merge_by_type() -> None:
    patch = {
        "status": {
            "conditions": [
                {"type": "PodResizePending", "status": "True", "reason": "Deferred"},
                {"type": "Ready", "status": "False"},
            ]
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    conditions = {c["type"]: c["status"] for c in out["status"]["conditions"]}
    assert conditions == {"Ready": "False", "PodScheduled": "True", "PodResizePending": "True"}


def test_volume_retain_keys_switches_source() -> None:
    patch = {
        "spec": {
            "$setElementOrder/volumes": [{"name": "data"}],
            "volumes": [
                {"name": "data", "$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/x"}}
            ],
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    assert out["spec"]["volumes"] == [{"name": "data", "hostPath": {"path": "/x"}}]


def test_deployment_strategy_retain_keys() -> None:
    deployment = {
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        }
    }
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = apply_strategic_merge_patch(deployment, patch, DEPLOYMENT_SCHEMA)
    assert out["spec"] == {"replicas": 2, "strategy": {"type": "Recreate"}}


def test_retain_keys_rejected_at_root_and_without_schema() -> None:
    with pytest.raises(PatchError, match=r"\$retainKeys is only allowed"):
        apply_strategic_merge_patch({"a": 1}, {"$retainKeys": ["a"]}, POD_SCHEMA)
    with pytest.raises(PatchError, match=r"spec\.strategy: \$retainKeys"):
        apply_strategic_merge_patch(
            {"spec": {"strategy": {}}},
            {"spec": {"strategy": {"$retainKeys": []}}},
            PatchSchema(None),
        )


def test_without_schema_every_list_is_atomic() -> None:
    pod = _pod()
    out = apply_strategic_merge_patch(
        pod, {"spec": {"containers": [{"name": "app"}]}}, PatchSchema(None)
    )
    assert out["spec"]["containers"] == [{"name": "app"}]


def test_strategic_error_names_the_field() -> None:
    patch = {"spec": {"containers": [{"name": "app", "env": [{"value": "x"}]}]}}
    with pytest.raises(PatchError, match=r"spec\.containers\[name=app\]\.env: .*merge key 'name'"):
        apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)


def test_strategic_rejects_non_objects() -> None:
    with pytest.raises(PatchError, match="must be a JSON object"):
        apply_strategic_merge_patch({}, [], POD_SCHEMA)  # type: ignore[arg-type]
    with pytest.raises(PatchError, match="not an object"):
        apply_strategic_merge_patch([], {}, POD_SCHEMA)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- properties

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5)
)
_keys = st.text(min_size=0, max_size=4)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)
# RFC 7386 cannot express a null object member: the "modified" side has none.
json_values_without_null_members = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_keys, inner.filter(lambda v: v is not None), max_size=4)
    ),
    max_leaves=20,
)


@given(json_values, json_values_without_null_members)
def test_merge_patch_round_trip(original: Any, modified: Any) -> None:
    before = copy.deepcopy(original)
    patch = create_merge_patch(original, modified)
    assert json_equal(apply_merge_patch(original, patch), modified)
    assert json_equal(original, before)


@given(st.dictionaries(_keys, json_values, max_size=5), _keys, json_values)
def test_json_patch_add_then_remove_is_identity(doc: dict[str, Any], key: str, value: Any) -> None:
    if key in doc:
        return
    before = copy.deepcopy(doc)
    pointer = "/" + key.replace("~", "~0").replace("/", "~1")
    added = apply_json_patch(doc, [{"op": "add", "path": pointer, "value": value}])
    assert json_equal(
        apply_json_patch(added, [{"op": "test", "path": pointer, "value": value}]), added
    )
    assert json_equal(apply_json_patch(added, [{"op": "remove", "path": pointer}]), doc)
    assert json_equal(doc, before)


@given(st.lists(json_values, max_size=5), st.data())
def test_json_patch_array_insert_then_remove(items: list[Any], data: st.DataObject) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(items)))
    value = data.draw(json_values)
    doc = {"xs": items}
    added = apply_json_patch(doc, [{"op": "add", "path": f"/xs/{index}", "value": value}])
    assert json_equal(added["xs"][index], value)
    assert json_equal(apply_json_patch(added, [{"op": "remove", "path": f"/xs/{index}"}]), doc)


_names = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
_quantities = st.sampled_from(["100m", "1", "2", "500Mi", "1Gi"])


@settings(max_examples=200)
@given(
    st.lists(_names, min_size=1, max_size=6, unique=True),
    st.data(),
)
def test_resizing_one_container_keeps_the_others(names: list[str], data: st.DataObject) -> None:
    containers = [
        {"name": n, "image": f"img-{n}", "resources": {"requests": {"cpu": "1"}}} for n in names
    ]
    pod = {"spec": {"containers": containers}}
    before = copy.deepcopy(pod)
    target = data.draw(st.sampled_from(names))
    cpu, memory = data.draw(_quantities), data.draw(_quantities)
    patch = {
        "spec": {
            "containers": [
                {
                    "name": target,
                    "resources": {"requests": {"cpu": cpu}, "limits": {"memory": memory}},
                }
            ]
        }
    }
    out = apply_strategic_merge_patch(pod, patch, POD_SCHEMA)
    assert [c["name"] for c in out["spec"]["containers"]] == names
    for got, was in zip(out["spec"]["containers"], before["spec"]["containers"], strict=True):
        if got["name"] == target:
            assert got["resources"] == {"requests": {"cpu": cpu}, "limits": {"memory": memory}}
            assert got["image"] == was["image"]
        else:
            assert got == was
    assert pod == before


@given(
    st.lists(_names, min_size=0, max_size=6, unique=True),
    st.lists(_names, min_size=0, max_size=4, unique=True),
)
def test_merging_list_keeps_existing_relative_order(names: list[str], patched: list[str]) -> None:
    original = {"mergingList": [{"name": n, "value": "old"} for n in names]}
    patch = {"mergingList": [{"name": n, "other": "new"} for n in patched]}
    out = apply_strategic_merge_patch(original, patch, MERGE_ITEM)
    result = [item["name"] for item in out["mergingList"]]
    assert sorted(result) == sorted(set(names) | set(patched))
    untouched = [n for n in result if n not in patched]
    assert untouched == [n for n in names if n not in patched]
    assert [n for n in result if n in patched] == patched
