"""Rule matching and covering, as tables (upstream's evaluation helpers and comparator)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.apiserver.auth import User
from inplace.apiserver.authz.rules import (
    Attributes,
    PolicyRule,
    breakdown,
    compact_rules,
    compact_string,
    covers,
    rule_allows,
)

JANE = User("jane")


def ask(verb: str, resource: str = "pods", **kw: str) -> Attributes:
    return Attributes(JANE, verb, resource=resource, **kw)


def url(verb: str, path: str) -> Attributes:
    return Attributes(JANE, verb, resource_request=False, path=path)


def r(
    verbs: tuple[str, ...],
    groups: tuple[str, ...] = ("",),
    resources: tuple[str, ...] = ("pods",),
    names: tuple[str, ...] = (),
) -> PolicyRule:
    return PolicyRule(verbs, groups, resources, names)


def u(verbs: tuple[str, ...], *urls: str) -> PolicyRule:
    return PolicyRule(verbs, non_resource_urls=urls)


MATCHING = [
    ("exact", r(("get",)), ask("get"), True),
    ("other verb", r(("get",)), ask("list"), False),
    ("verb star", r(("*",)), ask("deletecollection"), True),
    ("group must match", r(("get",), ("apps",)), ask("get"), False),
    ("group star", r(("get",), ("*",)), ask("get", api_group="batch"), True),
    (
        "resource star covers subresources",
        r(("create",), resources=("*",)),
        ask("create", subresource="exec"),
        True,
    ),
    (
        "a resource does not cover its subresources",
        r(("create",)),
        ask("create", subresource="exec"),
        False,
    ),
    (
        "pods/exec",
        r(("create",), resources=("pods/exec",)),
        ask("create", subresource="exec"),
        True,
    ),
    (
        "*/scale",
        r(("get",), ("*",), ("*/scale",)),
        ask("get", "deployments", subresource="scale", api_group="apps"),
        True,
    ),
    (
        "*/scale is not */status",
        r(("get",), ("*",), ("*/scale",)),
        ask("get", subresource="status"),
        False,
    ),
    ("*/scale is not the resource", r(("get",), ("*",), ("*/scale",)), ask("get"), False),
    ("resource names limit", r(("get",), names=("a",)), ask("get", name="a"), True),
    ("another name", r(("get",), names=("a",)), ask("get", name="b"), False),
    ("names never match a list", r(("list",), names=("a",)), ask("list"), False),
    ("no names: any name", r(("get",)), ask("get", name="x"), True),
    ("url exact", u(("get",), "/healthz"), url("get", "/healthz"), True),
    ("url prefix star", u(("get",), "/api/*"), url("get", "/api/v1"), True),
    (
        "prefix star includes the bare prefix with slash",
        u(("get",), "/api/*"),
        url("get", "/api/"),
        True,
    ),
    ("prefix star excludes the parent", u(("get",), "/api/*"), url("get", "/api"), False),
    ("url star", u(("*",), "*"), url("post", "/anything"), True),
    ("url rule never matches resources", u(("*",), "*"), ask("get"), False),
    ("resource rule never matches urls", r(("*",), ("*",), ("*",)), url("get", "/healthz"), False),
]


@pytest.mark.parametrize(
    ("rule", "attrs", "allowed"),
    [case[1:] for case in MATCHING],
    ids=[case[0] for case in MATCHING],
)
def test_rule_allows(rule: PolicyRule, attrs: Attributes, allowed: bool) -> None:
    assert rule_allows(attrs, rule) is allowed


COVERS = [
    ("the same rule", [r(("get", "list"))], [r(("list",))], []),
    ("star verbs", [r(("*",))], [r(("get", "delete"))], []),
    ("a missing verb", [r(("get",))], [r(("get", "delete"))], [r(("delete",))]),
    (
        "*/subresource covers a named subresource",
        [r(("get",), resources=("*/scale",))],
        [r(("get",), resources=("deployments/scale",))],
        [],
    ),
    ("names are narrower", [r(("get",), names=("a",))], [r(("get",))], [r(("get",))]),
    ("no names cover names", [r(("get",))], [r(("get",), names=("a", "b"))], []),
    (
        "some names",
        [r(("get",), names=("a",))],
        [r(("get",), names=("a", "b"))],
        [r(("get",), names=("b",))],
    ),
    (
        "urls by prefix",
        [u(("get",), "/api/*")],
        [u(("get",), "/api/v1", "/apis")],
        [u(("get",), "/apis")],
    ),
    (
        "cluster-admin covers everything",
        [r(("*",), ("*",), ("*",)), u(("*",), "*")],
        [r(("escalate",), ("rbac.authorization.k8s.io",), ("roles",)), u(("get",), "/x")],
        [],
    ),
]


@pytest.mark.parametrize(
    ("owner", "servant", "missing"),
    [case[1:] for case in COVERS],
    ids=[case[0] for case in COVERS],
)
def test_covers(
    owner: list[PolicyRule], servant: list[PolicyRule], missing: list[PolicyRule]
) -> None:
    ok, lacking = covers(owner, servant)
    assert ok is (not missing)
    assert lacking == missing


def test_breakdown_is_one_rule_per_group_resource_verb_and_name() -> None:
    rule = PolicyRule(("get", "list"), ("", "apps"), ("pods",), ("a",))
    assert len(breakdown(rule)) == 4
    assert breakdown(u(("get", "post"), "/a", "/b")) == [
        u(("get",), "/a"),
        u(("post",), "/a"),
        u(("get",), "/b"),
        u(("post",), "/b"),
    ]


def test_compact_rules_and_their_strings_as_upstream_prints_them() -> None:
    missing = [*breakdown(r(("get", "list", "watch"), ("",), ("pods",))), u(("get",), "/metrics")]
    compacted = compact_rules(missing)
    assert sorted(compact_string(rule) for rule in compacted) == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "watch"]}',
        '{NonResourceURLs:["/metrics"], Verbs:["get"]}',
    ]


names = st.sampled_from(["a", "b", "c"])
verbs = st.sampled_from(["get", "list", "create", "delete", "*"])
resources = st.sampled_from(["pods", "pods/exec", "secrets", "*", "*/exec"])
rules = st.builds(
    PolicyRule,
    st.lists(verbs, min_size=1, max_size=3).map(tuple),
    st.lists(st.sampled_from(["", "apps", "*"]), min_size=1, max_size=2).map(tuple),
    st.lists(resources, min_size=1, max_size=2).map(tuple),
    st.one_of(st.just(()), st.lists(names, min_size=1, max_size=2).map(tuple)),
)


@given(st.lists(rules, max_size=4), rules, names)
def test_a_covered_rule_never_allows_more_than_its_owner(
    owner: list[PolicyRule], servant: PolicyRule, name: str
) -> None:
    """Whatever request a covered rule allows, the owner's rules allow too: the property that
    makes the escalation check sound."""
    ok, _ = covers(owner, [servant])
    if not ok:
        return
    for verb in ("get", "list", "create", "delete"):
        for group in ("", "apps"):
            for resource, sub in (("pods", ""), ("pods", "exec"), ("secrets", "")):
                attrs = ask(verb, resource, api_group=group, subresource=sub, name=name)
                if rule_allows(attrs, servant):
                    assert any(rule_allows(attrs, rule) for rule in owner)
