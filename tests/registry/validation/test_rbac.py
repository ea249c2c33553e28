"""Roles, ClusterRoles and their bindings, with upstream's paths and messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.registry.kinds import Kind
from inplace.registry.strategy import apply_defaults
from inplace.registry.validation import validate_create, validate_update
from tests.api.validation.builders import create_messages, kind, messages, mutate

ROLE = kind("rbac.authorization.k8s.io", "Role")
CLUSTER_ROLE = kind("rbac.authorization.k8s.io", "ClusterRole")
ROLE_BINDING = kind("rbac.authorization.k8s.io", "RoleBinding")
CLUSTER_ROLE_BINDING = kind("rbac.authorization.k8s.io", "ClusterRoleBinding")
RBAC = "rbac.authorization.k8s.io"


def role(name: str = "pod-reader", **fields: Any) -> dict[str, Any]:
    rules = fields.pop("rules", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
    return {"metadata": {"name": name, "namespace": "default"}, "rules": rules, **fields}


def cluster_role(name: str = "system:pod-reader", **fields: Any) -> dict[str, Any]:
    obj = role(name, **fields)
    del obj["metadata"]["namespace"]
    return obj


def binding(**fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "read-pods", "namespace": "default"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "pod-reader"},
        "subjects": [
            {"kind": "User", "apiGroup": RBAC, "name": "jane"},
            {"kind": "Group", "apiGroup": RBAC, "name": "devs"},
            {"kind": "ServiceAccount", "name": "default", "namespace": "default"},
        ],
        **fields,
    }


def cluster_binding(**fields: Any) -> dict[str, Any]:
    obj = binding(**fields)
    del obj["metadata"]["namespace"]
    obj["roleRef"] = fields.get(
        "roleRef", {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"}
    )
    obj["subjects"] = fields.get(
        "subjects", [{"kind": "ServiceAccount", "name": "app", "namespace": "team-a"}]
    )
    return obj


VALID: list[tuple[Kind, Callable[[], dict[str, Any]]]] = [
    (ROLE, role),
    (CLUSTER_ROLE, cluster_role),
    (
        CLUSTER_ROLE,
        lambda: cluster_role("health", rules=[{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]),
    ),
    (
        CLUSTER_ROLE,
        lambda: cluster_role(
            "monitoring",
            rules=[],
            aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"team": "mon"}}]},
        ),
    ),
    (
        ROLE,
        lambda: role(
            rules=[
                {"apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"], "verbs": ["*"]}
            ]
        ),
    ),
    (ROLE_BINDING, binding),
    (CLUSTER_ROLE_BINDING, cluster_binding),
]


@pytest.mark.parametrize(("k", "build"), VALID)
def test_valid_objects_pass(k: Kind, build: Callable[[], dict[str, Any]]) -> None:
    validate_create(k, build())


INVALID: list[tuple[str, Kind, Callable[[], dict[str, Any]], list[str]]] = [
    (
        "names are path segments",
        ROLE,
        lambda: role("a/b"),
        ["metadata.name: Invalid value: \"a/b\": may not contain '/'"],
    ),
    (
        "a rule needs verbs, groups and resources",
        ROLE,
        lambda: role(rules=[{}]),
        [
            "rules[0].verbs: Required value: verbs must contain at least one value",
            "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
            "rules[0].resources: Required value: resource rules must supply at least one resource",
        ],
    ),
    (
        "a namespaced rule has no URLs, and a rule is not both",
        ROLE,
        lambda: role(rules=[{"nonResourceURLs": ["/x"], "resources": ["pods"], "verbs": ["get"]}]),
        [
            'rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to '
            "non-resource URLs",
            'rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular '
            "resources and non-resource URLs",
        ],
    ),
    (
        "resource names apply to one resource",
        CLUSTER_ROLE,
        lambda: cluster_role(
            rules=[
                {
                    "apiGroups": [""],
                    "resources": ["pods", "secrets"],
                    "resourceNames": ["a"],
                    "verbs": ["get"],
                }
            ]
        ),
        [
            "rules[0].resourceNames: Required value: resource names cannot apply to multiple "
            "resources"
        ],
    ),
    (
        "an aggregation rule needs a selector",
        CLUSTER_ROLE,
        lambda: cluster_role(aggregationRule={"clusterRoleSelectors": []}),
        [
            "aggregationRule.clusterRoleSelectors: Required value: at least one "
            "clusterRoleSelector required if aggregationRule is non-nil"
        ],
    ),
    (
        "roleRef group, kind and name",
        ROLE_BINDING,
        lambda: binding(roleRef={"apiGroup": "example.com", "kind": "Secret", "name": ""}),
        [
            'roleRef.apiGroup: Unsupported value: "example.com": supported values: '
            '"rbac.authorization.k8s.io"',
            'roleRef.kind: Unsupported value: "Secret": supported values: "Role", "ClusterRole"',
            "roleRef.name: Required value",
        ],
    ),
    (
        "a cluster binding names a ClusterRole",
        CLUSTER_ROLE_BINDING,
        lambda: cluster_binding(roleRef={"apiGroup": RBAC, "kind": "Role", "name": "x"}),
        ['roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"'],
    ),
    (
        "subjects: kinds, groups, names and a service account's namespace",
        CLUSTER_ROLE_BINDING,
        lambda: cluster_binding(
            subjects=[
                {"kind": "Robot", "name": "r2"},
                {"kind": "User", "name": "jane"},
                {"kind": "ServiceAccount", "name": "Bad_Name", "apiGroup": RBAC},
                {"kind": "Group", "apiGroup": RBAC},
            ]
        ),
        [
            'subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", '
            '"User", "Group"',
            'subjects[1].apiGroup: Unsupported value: "": supported values: '
            '"rbac.authorization.k8s.io"',
            'subjects[2].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must '
            "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            'subjects[2].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported '
            'values: ""',
            "subjects[2].namespace: Required value",
            "subjects[3].name: Required value",
            'subjects[3].name: Invalid value: "": group name cannot be empty',
        ],
    ),
]


@pytest.mark.parametrize(
    ("k", "build", "expected"),
    [case[1:] for case in INVALID],
    ids=[case[0] for case in INVALID],
)
def test_invalid_objects_name_every_bad_field(
    k: Kind, build: Callable[[], dict[str, Any]], expected: list[str]
) -> None:
    assert create_messages(k, build()) == expected


def test_a_bindings_role_ref_is_immutable() -> None:
    old = binding()
    new = mutate(old, lambda b: b["roleRef"].update(name="other"))
    assert messages(lambda: validate_update(ROLE_BINDING, new, old)) == [
        'roleRef: Invalid value: {"apiGroup":"rbac.authorization.k8s.io","kind":"Role",'
        '"name":"other"}: cannot change roleRef'
    ]
    more = mutate(
        old, lambda b: b["subjects"].append({"kind": "User", "apiGroup": RBAC, "name": "x"})
    )
    validate_update(ROLE_BINDING, more, old)


def test_users_and_groups_default_to_the_rbac_group() -> None:
    obj = binding(
        roleRef={"kind": "Role", "name": "pod-reader"},
        subjects=[{"kind": "User", "name": "jane"}, {"kind": "ServiceAccount", "name": "sa"}],
    )
    apply_defaults(ROLE_BINDING, obj)
    assert obj["roleRef"]["apiGroup"] == RBAC
    assert obj["subjects"] == [
        {"kind": "User", "name": "jane", "apiGroup": RBAC},
        {"kind": "ServiceAccount", "name": "sa"},
    ]
