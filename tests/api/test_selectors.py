"""Label and field selectors against upstream's own test tables (apimachinery selector_test.go)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.api.selectors import (
    METADATA_FIELDS,
    FieldSelector,
    LabelSelector,
    Requirement,
    SelectableFields,
    SelectorError,
)
from inplace.registry.kinds import REGISTRY


def fields(kind: str) -> SelectableFields:
    """The field labels the served kind called `kind` selects on, from its strategy; metadata
    only for a kind the server does not serve."""
    served = [k for k in REGISTRY.kinds if k.kind == kind]
    return served[0].strategy.selectable_fields if served else METADATA_FIELDS


# --- label selectors: parse and String() ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"],
)
def test_upstream_good_strings_restring_without_spaces(text: str) -> None:
    assert str(LabelSelector.parse(text)) == text.replace(" ", "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\rx", "x"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
        ),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x  notin\t\t\t(abc,def)", "x notin (abc,def)"),
        ("x in (def,abc)", "x in (abc,def)"),  # values print sorted
        ("x in (abc,)", "x in (,abc)"),
        ("x in ()", "x in ()"),
        ("x notin ( )", "x notin ()"),
        ("x notin (, a)", "x notin (,a)"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("x in (b,a,b)", "x in (a,b)"),  # a set: duplicates collapse
        ("x notin (abc,def),bar,z in (),w", "bar,w,x notin (abc,def),z in ()"),  # sorted by key
        ("x,y in (a)", "x,y in (a)"),
        ("x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"),
        ("y==b,x=a", "x=a,y==b"),
        ("x<7", "x<7"),
        ("a ", "a"),
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),  # keywords are values here
        ("notin=in", "notin=in"),
        ("in in (in)", "in in (in)"),
        ("x=a,a=x", "a=x,x=a"),
    ],
)
def test_parse_then_string(text: str, expected: str) -> None:
    assert str(LabelSelector.parse(text)) == expected


def test_parse_is_deterministic() -> None:
    assert LabelSelector.parse("x=a,a=x") == LabelSelector.parse("a=x,x=a")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x=a||y=b", 'values[0][x]: Invalid value: "a||y": a valid label must be'),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x<a", "for 'Gt', 'Lt' operators, the value must be an integer"),
        ("x,,y", "found ',', expected: identifier after ','"),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
        ("x nott in (y)", "found 'nott', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in (xyz),", "found '', expected: identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
        ("a in (xyz abc)", "found 'abc', expected: ',' or ')'"),
        ("a notin(", "found '', expected: ',', ')' or identifier"),
        ("a (", "found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        ("x in (a", "found '', expected: ',' or ')'"),
        ("-x=a", '<nil>: Invalid value: "-x": name part must consist of alphanumeric'),
        ("x=-a", 'values[0][x]: Invalid value: "-a"'),
        ("a/b/c", 'Invalid value: "a/b/c": a qualified name must consist'),
        ("/a", "prefix part must be non-empty"),
        ("Example.com/a", "prefix part a lowercase RFC 1123 subdomain"),
        ("a/", "name part must be non-empty"),
        ("x" * 64, "name part must be no more than 63 characters"),
        ("x=" + "v" * 64, "must be no more than 63 characters"),
        ("x in (" + "v" * 64 + ")", "must be no more than 63 characters"),
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        ("x=>1", "found '>', expected: identifier"),
        ("x>99999999999999999999", "the value must be an integer"),
        ("x>-5", 'Invalid value: "-5": a valid label must be'),  # values are label values too
    ],
)
def test_parse_errors_name_the_bad_input(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        LabelSelector.parse(text)
    assert message in str(err.value)


def test_requirement_errors_are_wrapped_like_upstream() -> None:
    with pytest.raises(SelectorError, match=r"^unable to parse requirement: values\[0\]\[x\]: "):
        LabelSelector.parse("x=-a")
    assert isinstance(SelectorError("x"), ValueError)


def test_value_error_uses_upstream_example_list() -> None:
    with pytest.raises(SelectorError) as err:
        LabelSelector.parse("x=-a")
    assert str(err.value).endswith(
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )


# --- label selectors: matching -------------------------------------------------------------

FOO_BAZ = {"foo": "bar", "baz": "blah"}


@pytest.mark.parametrize(
    ("text", "labels", "match"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x<1", {"x": "2"}, False),
        ("foo=bar", FOO_BAZ, True),
        ("baz=blah", FOO_BAZ, True),
        ("foo=bar,baz=blah", FOO_BAZ, True),
        ("foo=blah", FOO_BAZ, False),
        ("baz=bar", FOO_BAZ, False),
        ("foo=bar,foobar=bar,baz=blah", FOO_BAZ, False),
        # set-based (TestRequirementSelectorMatching)
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
        ("x notin (),y", {"y": ""}, True),
        ("!x,y", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x in ()", {"y": "baz"}, False),
        ("x in ()", {"x": ""}, True),
        ("z>1", {"z": "2"}, True),
        ("z>1", {"z": "v2"}, False),
        ("z<1", {}, False),
        ("x notin (a)", {}, True),  # notin and != match a missing key
        ("x!=a", {}, True),
        ("x==a", {"x": "a"}, True),
        ("x>5", {"x": "-4"}, False),
        ("x<5", {"x": "-4"}, True),
    ],
)
def test_matches(text: str, labels: dict[str, str], match: bool) -> None:
    assert LabelSelector.parse(text).matches(labels) is match


def test_matches_none_labels_as_empty() -> None:
    assert LabelSelector.parse("!x").matches(None)
    assert not LabelSelector.parse("x").matches(None)
    assert LabelSelector.parse("").matches(None)


def test_is_everything() -> None:
    assert LabelSelector.parse("").is_everything()
    assert LabelSelector.parse("  ").is_everything()
    assert LabelSelector.everything().is_everything()
    assert not LabelSelector.parse("x").is_everything()
    assert not LabelSelector.nothing().is_everything()


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("key in (value)", "key", "value"),
        ("key in (value,value2)", "key", None),
        ("key in (value,value1),key2 in (value2)", "key2", "value2"),
        ("key=value", "key", "value"),
        ("key==value", "key", "value"),
        ("key!=value", "key", None),
        ("key in (value),key2 in (value2)", "key", "value"),
        ("other=x", "key", None),
    ],
)
def test_exact_match(text: str, key: str, value: str | None) -> None:
    assert LabelSelector.parse(text).exact(key) == value


# --- label selectors from metav1.LabelSelector ---------------------------------------------


def test_from_dict_none_matches_nothing_and_empty_matches_everything() -> None:
    nothing = LabelSelector.from_dict(None)
    assert not nothing.matches({})
    assert not nothing.matches({"a": "b"})
    assert not nothing.is_everything()
    assert str(nothing) == ""
    empties: list[dict[str, Any]] = [
        {},
        {"matchLabels": {}},
        {"matchLabels": None, "matchExpressions": []},
    ]
    for empty in empties:
        selector = LabelSelector.from_dict(empty)
        assert selector.is_everything()
        assert selector.matches({"a": "b"})
        assert selector.matches(None)


@pytest.mark.parametrize(
    ("selector", "text", "labels", "match"),
    [
        ({"matchLabels": {"app": "web"}}, "app=web", {"app": "web", "x": "y"}, True),
        ({"matchLabels": {"app": "web"}}, "app=web", {"app": "db"}, False),
        (
            {"matchLabels": {"b": "1", "a": "2"}},
            "a=2,b=1",
            {"a": "2", "b": "1"},
            True,
        ),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["z", "y"]}]},
            "tier in (y,z)",
            {"tier": "y"},
            True,
        ),
        (
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
            "tier notin (a)",
            {},
            True,
        ),
        (
            {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
            "gpu",
            {"gpu": ""},
            True,
        ),
        (
            {"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist", "values": []}]},
            "!gpu",
            {"gpu": "1"},
            False,
        ),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}],
            },
            "app=web,app in (api,web)",
            {"app": "web"},
            True,
        ),
    ],
)
def test_from_dict(
    selector: dict[str, Any], text: str, labels: dict[str, str], match: bool
) -> None:
    parsed = LabelSelector.from_dict(selector)
    assert str(parsed) == text
    assert parsed.matches(labels) is match


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "Foo", "values": ["x"]}]},
            '"Foo" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be "
            "empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "values set must be empty for exists and does not exist",
        ),
        ({"matchLabels": {"a": "b c"}}, 'values[0][a]: Invalid value: "b c"'),
        ({"matchLabels": {"-a": "b"}}, 'key: Invalid value: "-a"'),
    ],
)
def test_from_dict_errors(selector: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as err:
        LabelSelector.from_dict(selector)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("key", "op", "values", "ok"),
    [
        ("x", "in", [], False),
        ("x", "notin", [], False),
        ("x", "in", ["foo"], True),
        ("x", "notin", ["foo"], True),
        ("x", "exists", [], True),
        ("x", "!", [], True),
        ("1foo", "in", ["bar"], True),
        ("1234", "in", ["bar"], True),
        ("y", "gt", ["1"], True),
        ("z", "lt", ["6"], True),
        ("foo", "gt", ["bar"], False),
        ("barz", "lt", ["blah"], False),
        ("a" * 254, "exists", [], False),
        ("x", "=", ["a", "b"], False),
        ("x", "~", ["a"], False),
    ],
)
def test_requirement_constructor(key: str, op: str, values: list[str], ok: bool) -> None:
    if ok:
        assert Requirement.new(key, op, values).key == key
    else:
        with pytest.raises(SelectorError):
            Requirement.new(key, op, values)


def test_several_errors_are_aggregated() -> None:
    with pytest.raises(SelectorError) as err:
        Requirement.new("-a", "in", [])
    assert str(err.value).startswith("[key: Invalid value")


# --- hypothesis: String() re-parses to the same selector ------------------------------------

_alnum = st.sampled_from("abcxyzABC019")
_inner = st.text(alphabet="abz09-_.", max_size=4)
_names = st.builds(lambda a, mid, b: a + mid + b, _alnum, _inner, _alnum) | _alnum
_prefixes = st.lists(st.text(alphabet="abc019", min_size=1, max_size=4), min_size=1, max_size=3)
_keys = _names | st.builds(lambda p, n: ".".join(p) + "/" + n, _prefixes, _names)
_values = st.just("") | _names
_space = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def _requirement_texts(draw: st.DrawFn) -> str:
    key = draw(_keys)
    op = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!", ">", "<"]))
    sp = draw(_space)
    if op == "exists":
        return key
    if op == "!":
        return "!" + sp + key
    if op in ("in", "notin"):
        values = draw(st.lists(_values, min_size=1, max_size=4))
        return f"{key} {op}{sp}({sp}{(',' + sp).join(values)}{sp})"
    if op in (">", "<"):
        return f"{key}{sp}{op}{sp}{draw(st.integers(0, 2**62))}"
    return f"{key}{sp}{op}{sp}{draw(_values)}"


_selector_texts = st.lists(_requirement_texts(), max_size=5).map(",".join)


@given(_selector_texts)
def test_string_form_reparses_to_an_equal_selector(text: str) -> None:
    selector = LabelSelector.parse(text)
    again = LabelSelector.parse(str(selector))
    assert again == selector
    assert str(again) == str(selector)


@given(st.text(alphabet="ab=!(), in\t-x/.", max_size=20))
def test_any_text_either_fails_cleanly_or_round_trips(text: str) -> None:
    try:
        selector = LabelSelector.parse(text)
    except SelectorError:
        return
    assert LabelSelector.parse(str(selector)) == selector


@given(
    st.dictionaries(_keys, _names, max_size=3),
    st.lists(
        st.tuples(
            _keys,
            st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
            st.lists(_names, min_size=1, max_size=3),
        ),
        max_size=3,
    ),
    st.dictionaries(_keys, _values, max_size=4),
)
def test_from_dict_string_form_selects_the_same(
    match_labels: dict[str, str],
    expressions: list[tuple[str, str, list[str]]],
    labels: dict[str, str],
) -> None:
    selector = LabelSelector.from_dict(
        {
            "matchLabels": match_labels,
            "matchExpressions": [
                {"key": k, "operator": op, "values": vs if op in ("In", "NotIn") else []}
                for k, op, vs in expressions
            ],
        }
    )
    assert LabelSelector.parse(str(selector)).matches(labels) == selector.matches(labels)


# --- field selectors -----------------------------------------------------------------------

POD: dict[str, Any] = {
    "metadata": {"name": "web-1", "namespace": "prod"},
    "spec": {
        "nodeName": "node-a",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
    },
    "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}], "podIP": "10.0.0.7"},
}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", True),
        ("spec.nodeName=node-a", True),
        ("spec.nodeName==node-a", True),
        ("spec.nodeName!=node-a", False),
        ("spec.nodeName=", False),
        ("spec.nodeName=node-b", False),
        ("spec.host=node-a", True),  # legacy label upstream still converts
        ("metadata.name=web-1,metadata.namespace=prod", True),
        ("metadata.name=web-1,metadata.namespace!=prod", False),
        ("status.phase=Running,spec.restartPolicy=Always", True),
        ("spec.schedulerName=default-scheduler,spec.serviceAccountName=default", True),
        ("spec.hostNetwork=false", True),  # missing bool renders as Go's false
        ("spec.hostNetwork=true", False),
        ("status.podIP=10.0.0.7", True),
        ("status.nominatedNodeName=", True),  # missing string renders as ""
        ("status.phase!=Pending,status.phase!=Succeeded", True),
        (",spec.nodeName=node-a,", True),  # empty terms are skipped
    ],
)
def test_pod_field_selector(text: str, match: bool) -> None:
    assert FieldSelector.parse(text, fields=fields("Pod")).matches(POD) is match


def test_pod_ip_falls_back_to_pod_ip_field() -> None:
    pod = {"status": {"podIP": "10.1.1.1"}}
    assert FieldSelector.parse("status.podIP=10.1.1.1", fields=fields("Pod")).matches(pod)
    assert FieldSelector.parse("spec.hostNetwork=true", fields=fields("Pod")).matches(
        {"spec": {"hostNetwork": True}}
    )


EVENT: dict[str, Any] = {
    "metadata": {"name": "web-1.17a", "namespace": "prod"},
    "involvedObject": {
        "kind": "Pod",
        "namespace": "prod",
        "name": "web-1",
        "uid": "u-1",
        "apiVersion": "v1",
        "resourceVersion": "42",
        "fieldPath": "spec.containers{app}",
    },
    "reason": "ResizeCompleted",
    "type": "Normal",
    "reportingComponent": "inplace-node",
}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "involvedObject.kind=Pod,involvedObject.name=web-1,involvedObject.namespace=prod",
            True,
        ),
        ("involvedObject.uid=u-1,involvedObject.apiVersion=v1", True),
        ("involvedObject.resourceVersion=42", True),
        ("involvedObject.fieldPath=spec.containers{app}", True),
        ("reason=ResizeCompleted,type=Normal", True),
        ("type=Warning", False),
        ("reportingComponent=inplace-node", True),
        ("source=inplace-node", True),  # source falls back to the reporting controller
    ],
)
def test_event_field_selector(text: str, match: bool) -> None:
    assert FieldSelector.parse(text, fields=fields("Event")).matches(EVENT) is match


def test_event_source_prefers_source_component() -> None:
    event = {**EVENT, "source": {"component": "kubelet"}}
    assert FieldSelector.parse("source=kubelet", fields=fields("Event")).matches(event)


@pytest.mark.parametrize(
    ("kind", "text", "obj", "match"),
    [
        ("Node", "spec.unschedulable=false", {"spec": {}}, True),
        ("Node", "spec.unschedulable=true", {"spec": {"unschedulable": True}}, True),
        ("Node", "metadata.name=n1", {"metadata": {"name": "n1"}}, True),
        ("Namespace", "status.phase=Active", {"status": {"phase": "Active"}}, True),
        ("Job", "status.successful=3", {"status": {"succeeded": 3}}, True),
        ("Job", "status.successful=0", {"status": {}}, True),  # Go's zero value
        ("ReplicaSet", "status.replicas=2", {"status": {"replicas": 2}}, True),
        ("ReplicaSet", "status.replicas!=2", {"status": {"replicas": 1}}, True),
        ("Widget", "metadata.namespace=default", {"metadata": {"namespace": "default"}}, True),
    ],
)
def test_field_selector_per_kind(kind: str, text: str, obj: dict[str, Any], match: bool) -> None:
    assert FieldSelector.parse(text, fields=fields(kind)).matches(obj) is match


@pytest.mark.parametrize(
    ("kind", "field"),
    [
        ("Pod", "spec.containers"),
        ("Pod", "status.hostIP"),
        ("Node", "spec.nodeName"),
        ("Namespace", "spec.finalizers"),
        ("Deployment", "status.replicas"),
        ("VerticalPodAutoscaler", "spec.targetRef.name"),
        ("Event", "message"),
    ],
)
def test_unsupported_field(kind: str, field: str) -> None:
    with pytest.raises(SelectorError, match=f"^field label not supported: {field}$"):
        FieldSelector.parse(f"{field}=x", fields=fields(kind))


def test_supported_fields() -> None:
    assert fields("Pod").supported() == {
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    }
    assert fields("Node").supported() == {
        "metadata.name",
        "metadata.namespace",
        "spec.unschedulable",
    }
    assert fields("Job").supported() == {"metadata.name", "metadata.namespace", "status.successful"}
    assert fields("ReplicaSet").supported() >= {"status.replicas"}
    assert fields("Namespace").supported() >= {"status.phase"}
    assert len(fields("Event").supported()) == 13
    assert fields("Lease").supported() == {"metadata.name", "metadata.namespace"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("metadata.name=a,metadata.namespace=b", "metadata.name=a,metadata.namespace=b"),
        ("metadata.namespace=b,metadata.name=a", "metadata.name=a,metadata.namespace=b"),
        ("metadata.name!=a", "metadata.name!=a"),
        ("metadata.name==a", "metadata.name=a"),
        (r"metadata.name=a||y\=b", r"metadata.name=a||y\=b"),
        (r"metadata.name=a\=\=b", r"metadata.name=a\=\=b"),
        (r"metadata.name=a\,b", r"metadata.name=a\,b"),
        (r"metadata.name=a\\", r"metadata.name=a\\"),
        ("", ""),
    ],
)
def test_field_selector_string_form(text: str, expected: str) -> None:
    assert str(FieldSelector.parse(text, fields=fields("Pod"))) == expected


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (r"metadata.name=a\=\=b", "a==b"),
        (r"metadata.name=a\,b", "a,b"),
        (r"metadata.name=a\\b", "a\\b"),
        (r"metadata.name=\\\=\,", "\\=,"),
        ("metadata.name=", ""),
    ],
)
def test_field_selector_unescapes_values(text: str, value: str) -> None:
    selector = FieldSelector.parse(text, fields=fields("Pod"))
    assert selector.exact("metadata.name") == value
    assert selector.matches({"metadata": {"name": value}})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x=a||y=b", "invalid field selector: unescaped character in value: '='"),
        ("x==a==b", "invalid field selector: unescaped character in value: '='"),
        ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
        ("x in (a)", "invalid selector: 'x in (a)'; can't understand 'x in (a)'"),
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        (r"metadata.name=a\b", r"invalid field selector: invalid escape sequence: \b"),
        ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_field_selector_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        FieldSelector.parse(text, fields=fields("Pod"))
    assert str(err.value) == message


def test_field_selector_exact_is_for_index_lookups() -> None:
    selector = FieldSelector.parse("spec.nodeName=n1,status.phase!=Failed", fields=fields("Pod"))
    assert selector.exact("spec.nodeName") == "n1"
    assert selector.exact("status.phase") is None  # != cannot use an index
    assert selector.exact("metadata.name") is None
    assert FieldSelector.parse("spec.host=n2", fields=fields("Pod")).exact("spec.nodeName") == "n2"
    assert FieldSelector.parse("", fields=fields("Pod")).is_everything()
    assert not selector.is_everything()


@given(st.text(alphabet="ab=\\,", max_size=8))
def test_field_values_round_trip_through_escaping(value: str) -> None:
    selector = FieldSelector.parse("metadata.name=" + _escape(value), fields=fields("Pod"))
    assert selector.exact("metadata.name") == value
    assert FieldSelector.parse(str(selector), fields=fields("Pod")) == selector


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
