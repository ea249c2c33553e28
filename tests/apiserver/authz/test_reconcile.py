"""The default roles: created at start, repaired at restart (never trimmed), protected when
asked; aggregated ClusterRoles follow the roles they select."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.authz.reconcile import aggregated_rules, reconcile_binding, reconcile_role
from inplace.apiserver.server import APIServer, APIServerConfig
from tests.apiserver.authz.conftest import RBAC, Caller, Cluster
from tests.poll import await_until

CLUSTER_ROLES = f"{RBAC}/clusterroles"


def rules_of(role: dict[str, Any]) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = role.get("rules") or []
    return rules


def grants(role: dict[str, Any], group: str, resource: str, verb: str) -> bool:
    return any(
        group in rule.get("apiGroups", ())
        and resource in rule.get("resources", ())
        and (verb in rule["verbs"] or "*" in rule["verbs"])
        for rule in rules_of(role)
    )


async def test_the_default_roles_exist_and_admin_edit_view_are_aggregated(
    cluster: Cluster,
) -> None:
    admin = cluster.admin
    status, listed = await admin.call("GET", CLUSTER_ROLES)
    assert status == 200
    names = {item["metadata"]["name"] for item in listed["items"]}
    assert {
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:node",
        "system:controller:replicaset-controller",
        "system:controller:deployment-controller",
        "system:controller:job-controller",
    } <= names
    roles = {item["metadata"]["name"]: item for item in listed["items"]}
    for name in names:
        meta = roles[name]["metadata"]
        assert meta["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert meta["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"
    view, edit, admin_role = roles["view"], roles["edit"], roles["admin"]
    assert grants(view, "", "pods", "list") and not grants(view, "", "pods", "create")
    assert grants(edit, "", "pods", "create") and grants(edit, "", "pods", "list")
    assert not grants(edit, "rbac.authorization.k8s.io", "rolebindings", "create")
    assert grants(admin_role, "rbac.authorization.k8s.io", "rolebindings", "create")
    assert grants(admin_role, "", "pods/exec", "create")
    scheduler = roles["system:kube-scheduler"]
    assert grants(scheduler, "", "pods/binding", "create")
    assert not grants(scheduler, "", "namespaces", "create")


async def test_a_labelled_cluster_role_extends_view_edit_and_admin(cluster: Cluster) -> None:
    admin = cluster.admin
    extra = {
        "metadata": {
            "name": "vpa-viewer",
            "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
        },
        "rules": [
            {
                "apiGroups": ["autoscaling.k8s.io"],
                "resources": ["verticalpodautoscalers"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    assert (await admin.call("POST", CLUSTER_ROLES, extra))[0] == 201

    async def granting() -> int:
        """How many of view, edit and admin hold the new rule."""
        count = 0
        for name in ("view", "edit", "admin"):
            role = (await admin.call("GET", f"{CLUSTER_ROLES}/{name}"))[1]
            count += grants(role, "autoscaling.k8s.io", "verticalpodautoscalers", "list")
        return count

    async def all_three() -> bool:
        return await granting() == 3

    async def none() -> bool:
        return await granting() == 0

    await await_until(all_three, timeout=10)
    assert (await admin.call("DELETE", f"{CLUSTER_ROLES}/vpa-viewer"))[0] == 200
    await await_until(none, timeout=10)


async def test_a_restart_repairs_defaults_keeps_additions_and_respects_protection(
    tmp_path: Path,
) -> None:
    tokens = TokenFile(tmp_path / "tokens.csv")
    config = APIServerConfig(data_dir=tmp_path / "apiserver", port=0, tokens=tokens)
    token = tokens.token_for("admin", (MASTERS_GROUP,))
    added = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}

    async def with_server(work: Any) -> None:
        server = APIServer(config)
        await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                await work(Caller(f"http://127.0.0.1:{server.port}", session, token))
        finally:
            await server.stop()

    async def tamper(admin: Caller) -> None:
        scheduler = (await admin.call("GET", f"{CLUSTER_ROLES}/system:kube-scheduler"))[1]
        scheduler["rules"] = [added]  # every default rule lost, one added
        assert (await admin.call("PUT", f"{CLUSTER_ROLES}/system:kube-scheduler", scheduler))[
            0
        ] == 200
        monitoring = (await admin.call("GET", f"{CLUSTER_ROLES}/system:monitoring"))[1]
        monitoring["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] = (
            "false"
        )
        monitoring["rules"] = [added]
        assert (await admin.call("PUT", f"{CLUSTER_ROLES}/system:monitoring", monitoring))[0] == 200
        binding_path = f"{RBAC}/clusterrolebindings/system:basic-user"
        binding = (await admin.call("GET", binding_path))[1]
        binding["subjects"] = []
        assert (await admin.call("PUT", binding_path, binding))[0] == 200

    async def check(admin: Caller) -> None:
        scheduler = (await admin.call("GET", f"{CLUSTER_ROLES}/system:kube-scheduler"))[1]
        assert added in scheduler["rules"]
        assert grants(scheduler, "", "pods/binding", "create")
        monitoring = (await admin.call("GET", f"{CLUSTER_ROLES}/system:monitoring"))[1]
        assert monitoring["rules"] == [added]
        binding = (await admin.call("GET", f"{RBAC}/clusterrolebindings/system:basic-user"))[1]
        assert {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Group",
            "name": "system:authenticated",
        } in binding["subjects"]

    await with_server(tamper)
    await with_server(check)


def test_reconcile_adds_what_is_missing_and_only_that() -> None:
    expected = {
        "metadata": {"name": "r", "labels": {"a": "1"}, "annotations": {"x": "y"}},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
    }
    existing = {
        "metadata": {"name": "r", "labels": {"a": "mine"}},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]}],
    }
    updated = reconcile_role(existing, expected)
    assert updated is not None
    assert updated["metadata"]["labels"] == {"a": "mine"}  # existing values win
    assert updated["metadata"]["annotations"] == {"x": "y"}
    assert updated["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    ]
    assert reconcile_role(updated, expected) is None
    binding = {"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "u"}]}
    wanted = {"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "v"}]}
    merged = reconcile_binding(binding, wanted)
    assert merged is not None and len(merged["subjects"]) == 2


def test_aggregation_is_the_union_in_name_order_without_duplicates() -> None:
    selector = {"clusterRoleSelectors": [{"matchLabels": {"agg": "yes"}}]}
    rule_a = {"apiGroups": [""], "resources": ["a"], "verbs": ["get"]}
    rule_b = {"apiGroups": [""], "resources": ["b"], "verbs": ["get"]}
    roles = [
        {"metadata": {"name": "target"}, "aggregationRule": selector, "rules": []},
        {"metadata": {"name": "z", "labels": {"agg": "yes"}}, "rules": [rule_a]},
        {"metadata": {"name": "m", "labels": {"agg": "yes"}}, "rules": [rule_b, rule_a]},
        {"metadata": {"name": "other"}, "rules": [{"verbs": ["*"]}]},
    ]
    assert aggregated_rules(roles[0], roles) == [rule_b, rule_a]
