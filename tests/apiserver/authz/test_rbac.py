"""The RBAC authorizer over real HTTP: bindings grant, nothing else does, and every denial
is upstream's 403."""

from __future__ import annotations

from collections.abc import Sequence

from inplace.apiserver.admission import AdmissionRequest
from tests.apiserver.authz.conftest import RBAC, Cluster, group, service_account, user

PODS = "/api/v1/namespaces/default/pods"


async def test_a_user_may_do_only_what_a_binding_grants(cluster: Cluster) -> None:
    bob = cluster.as_user("bob")
    status, body = await bob.call("GET", PODS)
    assert status == 403
    assert body["message"] == (
        'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the '
        'namespace "default"'
    )
    assert body["details"] == {"kind": "pods"}
    await cluster.bind("bob-views", "view", user("bob"), namespace="default")
    assert (await bob.call("GET", PODS))[0] == 200
    assert (await bob.call("GET", "/api/v1/namespaces/kube-system/pods"))[0] == 403
    # view reads no RBAC objects (nor secrets): they would show what others may do.
    assert (await bob.call("GET", f"{RBAC}/namespaces/default/rolebindings"))[0] == 403
    status, body = await bob.call("DELETE", f"{PODS}/anything")
    assert status == 403
    assert body["message"] == (
        'pods "anything" is forbidden: User "bob" cannot delete resource "pods" in API group '
        '"" in the namespace "default"'
    )
    assert body["details"] == {"kind": "pods", "name": "anything"}


async def test_groups_and_service_accounts_are_subjects(cluster: Cluster) -> None:
    await cluster.bind("devs-edit", "edit", group("devs"), namespace="default")
    dev = cluster.as_user("dana", "devs")
    assert (await dev.call("GET", PODS))[0] == 200
    # A service account subject without a namespace means the binding's.
    await cluster.bind("robot-view", "view", service_account("robot"), namespace="default")
    robot = cluster.as_user("system:serviceaccount:default:robot")
    assert (await robot.call("GET", PODS))[0] == 200
    other = cluster.as_user("system:serviceaccount:other:robot")
    assert (await other.call("GET", PODS))[0] == 403


async def test_a_binding_to_a_missing_role_says_so(cluster: Cluster) -> None:
    await cluster.bind("ghostly", "ghost", user("carol"), namespace="default", kind="Role")
    status, body = await cluster.as_user("carol").call("GET", PODS)
    assert status == 403
    assert body["message"].endswith(': RBAC: role.rbac.authorization.k8s.io "ghost" not found')


async def test_resource_names_limit_gets_and_single_object_watches(cluster: Cluster) -> None:
    role = {
        "metadata": {"name": "one-lease"},
        "rules": [
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "resourceNames": ["mine"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    assert (await cluster.admin.call("POST", f"{RBAC}/namespaces/default/roles", role))[0] == 201
    await cluster.bind("erin-lease", "one-lease", user("erin"), namespace="default", kind="Role")
    erin = cluster.as_user("erin")
    leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    assert (await erin.call("GET", f"{leases}/mine"))[0] == 404  # allowed; there is none
    assert (await erin.call("GET", f"{leases}/theirs"))[0] == 403
    assert (await erin.call("GET", leases))[0] == 403
    assert (await erin.call("GET", f"{leases}?fieldSelector=metadata.name%3Dmine"))[0] == 200


async def test_non_resource_urls(cluster: Cluster) -> None:
    anonymous = cluster.anonymous
    assert (await anonymous.call("GET", "/healthz"))[0] == 200
    assert (await anonymous.call("GET", "/version"))[0] == 200
    status, body = await anonymous.call("GET", "/api")
    assert status == 403
    assert body["message"] == 'forbidden: User "system:anonymous" cannot get path "/api"'
    frank = cluster.as_user("frank")
    assert (await frank.call("GET", "/api"))[0] == 200  # system:discovery, authenticated
    assert (await frank.call("GET", "/openapi/v3"))[0] == 200
    assert (await frank.call("GET", "/metrics"))[0] == 403
    await cluster.bind("frank-monitors", "system:monitoring", user("frank"))
    assert (await frank.call("GET", "/metrics"))[0] == 200


async def test_a_bad_token_is_401_even_for_public_paths(cluster: Cluster) -> None:
    forged = cluster.as_user("x")
    forged.token = "forged"
    status, body = await forged.call("GET", "/healthz")
    assert (status, body["reason"]) == (401, "Unauthorized")


async def test_an_apply_that_creates_needs_create(cluster: Cluster) -> None:
    """Upstream authorizes `create` too when a server-side apply creates the object."""
    patcher = {
        "metadata": {"name": "cm-patcher"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}],
    }
    roles = f"{RBAC}/namespaces/default/roles"
    assert (await cluster.admin.call("POST", roles, patcher))[0] == 201
    await cluster.bind("fay-patches", "cm-patcher", user("fay"), namespace="default", kind="Role")
    fay = cluster.as_user("fay")
    path = "/api/v1/namespaces/default/configmaps/settings?fieldManager=fay"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}}
    apply = "application/apply-patch+yaml"
    status, answer = await fay.call("PATCH", path, body, content_type=apply)
    assert status == 403
    assert answer["message"] == (
        'configmaps "settings" is forbidden: User "fay" cannot create resource "configmaps" '
        'in API group "" in the namespace "default"'
    )
    assert (await cluster.admin.call("GET", "/api/v1/namespaces/default/configmaps/settings"))[
        0
    ] == 404
    made = {"metadata": {"name": "settings"}, "data": {"a": "0"}}
    assert (await cluster.admin.call("POST", "/api/v1/namespaces/default/configmaps", made))[
        0
    ] == 201
    # The object exists: patch is all an apply needs (of a field nobody else owns).
    body["data"] = {"b": "1"}
    status, answer = await fay.call("PATCH", path, body, content_type=apply)
    assert status == 200, answer
    assert answer["data"] == {"a": "0", "b": "1"}


class AdmissionLog:
    """A validating admission plugin that admits everything and notes who wrote what, as an
    audit webhook would: the identity admission sees for each write of a Deployment."""

    def __init__(self) -> None:
        self.seen: list[tuple[str | None, str, tuple[str, ...], bool]] = []

    def validate(self, request: AdmissionRequest) -> Sequence[str]:
        if request.kind.plural == "deployments" and request.user is not None:
            user = request.user
            self.seen.append((request.subresource, user.name, user.groups, request.dry_run))
        return ()


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = "application/merge-patch+json"


async def test_a_scale_write_is_authorized_and_admitted_as_its_user(cluster: Cluster) -> None:
    """``deployments/scale`` is its own resource to RBAC: a user granted it (and not the
    Deployment) can scale; one with neither is refused naming the subresource. The write
    runs admission with the caller's identity (impersonated or not), as a write to the
    Deployment itself does."""
    audit = AdmissionLog()
    cluster.server.rest.admission.append(audit)
    deployment = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            },
        },
    }
    assert (await cluster.admin.call("POST", DEPLOYMENTS, deployment))[0] == 201
    role = {
        "metadata": {"name": "scaler"},
        "rules": [
            {
                "apiGroups": ["apps"],
                "resources": ["deployments/scale"],
                "verbs": ["get", "update", "patch"],
            }
        ],
    }
    assert (await cluster.admin.call("POST", f"{RBAC}/namespaces/default/roles", role))[0] == 201
    await cluster.bind("sam-scales", "scaler", user("sam"), namespace="default", kind="Role")

    sam = cluster.as_user("sam", "team-a")
    status, scale = await sam.call(
        "PATCH", f"{DEPLOYMENTS}/web/scale", {"spec": {"replicas": 3}}, content_type=MERGE
    )
    assert status == 200 and scale["spec"]["replicas"] == 3
    assert audit.seen[-1] == ("scale", "sam", ("team-a", "system:authenticated"), False)
    status, scale = await sam.call("GET", f"{DEPLOYMENTS}/web/scale")
    scale["spec"]["replicas"] = 2
    assert (await sam.call("PUT", f"{DEPLOYMENTS}/web/scale", scale))[0] == 200
    assert audit.seen[-1][:2] == ("scale", "sam")
    # A dry run is admitted as one, and stores nothing.
    status, scale = await sam.call(
        "PATCH",
        f"{DEPLOYMENTS}/web/scale?dryRun=All",
        {"spec": {"replicas": 9}},
        content_type=MERGE,
    )
    assert status == 200 and scale["spec"]["replicas"] == 9
    assert audit.seen[-1] == ("scale", "sam", ("team-a", "system:authenticated"), True)
    stored = (await cluster.admin.call("GET", f"{DEPLOYMENTS}/web"))[1]
    assert stored["spec"]["replicas"] == 2

    # The scale grant is not one on the Deployment.
    status, body = await sam.call(
        "PATCH", f"{DEPLOYMENTS}/web", {"spec": {"replicas": 5}}, content_type=MERGE
    )
    assert status == 403
    assert body["message"] == (
        'deployments.apps "web" is forbidden: User "sam" cannot patch resource "deployments" '
        'in API group "apps" in the namespace "default"'
    )
    # Neither grant: refused, naming the subresource, and nothing reaches admission.
    before = len(audit.seen)
    status, body = await cluster.as_user("nina").call(
        "PATCH", f"{DEPLOYMENTS}/web/scale", {"spec": {"replicas": 5}}, content_type=MERGE
    )
    assert status == 403
    assert body["message"] == (
        'deployments.apps "web" is forbidden: User "nina" cannot patch resource '
        '"deployments/scale" in API group "apps" in the namespace "default"'
    )
    assert len(audit.seen) == before

    # The admin acting as sam: authorized and admitted as sam.
    as_sam = {"Impersonate-User": "sam", "Impersonate-Group": "team-b"}
    status, scale = await cluster.admin.call(
        "PATCH",
        f"{DEPLOYMENTS}/web/scale",
        {"spec": {"replicas": 4}},
        content_type=MERGE,
        headers=as_sam,
    )
    assert status == 200 and scale["spec"]["replicas"] == 4
    assert audit.seen[-1] == ("scale", "sam", ("team-b", "system:authenticated"), False)
