"""Roles and bindings, as `kubectl get roles,rolebindings -o wide` prints them upstream."""

from __future__ import annotations

from tests.api.tables.helpers import HOUR, ago, by_name


def test_roles_show_when_they_were_created() -> None:
    role = {"metadata": {"name": "pod-reader", "creationTimestamp": ago(2 * HOUR)}}
    assert by_name("Role", role) == {"Name": "pod-reader", "Created At": "2025-06-01T10:00:00Z"}
    assert by_name("ClusterRole", role)["Created At"] == "2025-06-01T10:00:00Z"


def test_bindings_show_their_role_and_wide_their_subjects() -> None:
    binding = {
        "metadata": {"name": "read-pods", "creationTimestamp": ago(3 * HOUR)},
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "jane"},
            {"kind": "User", "name": "joe"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "app", "namespace": "team-a"},
        ],
    }
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        assert by_name(kind, binding) == {
            "Name": "read-pods",
            "Role": "ClusterRole/view",
            "Age": "3h",
            "Users": "jane, joe",
            "Groups": "devs",
            "ServiceAccounts": "team-a/app",
        }
    empty = {**binding, "subjects": None}
    assert by_name("RoleBinding", empty)["Users"] == ""
