"""RBAC with real kubectl against a real `inplace up`: `kubectl auth can-i`, impersonation,
least-privileged components and escalation prevention, as a user meets them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inplace.apiserver.auth import TokenFile
from tests.conftest import Cluster
from tests.poll import wait_until

pytestmark = pytest.mark.e2e

NAMESPACE = "rbac-e2e"


@pytest.fixture(scope="module")
def team(cluster: Cluster) -> Cluster:
    cluster.kubectl("create", "namespace", NAMESPACE)
    cluster.kubectl(
        "create",
        "rolebinding",
        "app-view",
        "--clusterrole=view",
        f"--serviceaccount={NAMESPACE}:app",
        "-n",
        NAMESPACE,
    )
    cluster.kubectl(
        "create", "rolebinding", "dave-edit", "--clusterrole=edit", "--user=dave", "-n", NAMESPACE
    )
    return cluster


def token(cluster: Cluster, user: str) -> str:
    return TokenFile(cluster.data_dir / "pki" / "tokens.csv").token_for(user, ())


def access_lines(output: str) -> dict[str, set[str]]:
    """`kubectl auth can-i --list`: resource (with group) → verbs, for resource rows."""
    rows: dict[str, set[str]] = {}
    for line in output.splitlines()[1:]:
        columns = line.split()
        if not columns or columns[0].startswith("["):
            continue  # a non-resource URL row
        verbs = line[line.rindex("[") + 1 : line.rindex("]")].split()
        rows.setdefault(columns[0], set()).update(verbs)
    return rows


def test_can_i_list_matches_the_bindings(team: Cluster) -> None:
    sa = f"system:serviceaccount:{NAMESPACE}:app"
    listed = team.kubectl("auth", "can-i", "--list", f"--as={sa}", "-n", NAMESPACE).stdout
    assert listed.splitlines()[0].split() == [
        "Resources",
        "Non-Resource",
        "URLs",
        "Resource",
        "Names",
        "Verbs",
    ]
    rows = access_lines(listed)
    view: dict[str, Any] = json.loads(
        team.kubectl("get", "clusterrole", "view", "-o", "json").stdout
    )
    expected: dict[str, set[str]] = {}
    for rule in view["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                # kubectl's CombineResourceGroup: "daemonsets.apps/status".
                name, _, sub = resource.partition("/")
                key = (f"{name}.{group}" if group else name) + (f"/{sub}" if sub else "")
                expected.setdefault(key, set()).update(rule["verbs"])
    for key, verbs in expected.items():
        assert verbs <= rows.get(key, set()), (key, listed)
    assert rows["selfsubjectaccessreviews.authorization.k8s.io"] == {"create"}
    # Nothing beyond view and what every authenticated user holds.
    assert not {"pods", "secrets", "rolebindings.rbac.authorization.k8s.io"} & {
        key for key, verbs in rows.items() if "create" in verbs
    }
    other = team.kubectl("auth", "can-i", "--list", f"--as={sa}", "-n", "default").stdout
    assert "pods" not in access_lines(other)


def test_can_i_answers_yes_and_no(team: Cluster) -> None:
    sa = f"system:serviceaccount:{NAMESPACE}:app"
    yes = team.kubectl("auth", "can-i", "list", "pods", f"--as={sa}", "-n", NAMESPACE)
    assert yes.stdout.strip() == "yes"
    no = team.kubectl("auth", "can-i", "delete", "pods", f"--as={sa}", "-n", NAMESPACE, check=False)
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    grouped = team.kubectl(
        "auth", "can-i", "create", "namespaces", "--as=jane", "--as-group=system:masters"
    )
    assert grouped.stdout.strip() == "yes"
    whoami = team.kubectl("auth", "whoami", f"--as={sa}", "-o", "json").stdout
    assert json.loads(whoami)["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts",
        f"system:serviceaccounts:{NAMESPACE}",
        "system:authenticated",
    ]


def test_the_schedulers_token_may_not_create_a_namespace(cluster: Cluster) -> None:
    scheduler = str(cluster.data_dir / "components" / "scheduler.kubeconfig")
    result = cluster.kubectl(
        "--kubeconfig", scheduler, "create", "namespace", "not-yours", check=False
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'Error from server (Forbidden): namespaces is forbidden: User "system:kube-scheduler" '
        'cannot create resource "namespaces" in API group "" at the cluster scope'
    )
    listed = cluster.kubectl("--kubeconfig", scheduler, "get", "pods", "-A", "-o", "name")
    assert listed.returncode == 0
    manager = str(cluster.data_dir / "components" / "controller-manager.kubeconfig")
    result = cluster.kubectl("--kubeconfig", manager, "delete", "namespace", "default", check=False)
    assert "Forbidden" in result.stderr


def test_a_user_with_edit_cannot_bind_cluster_admin(team: Cluster) -> None:
    dave = token(team, "dave")
    can = team.kubectl("auth", "can-i", "create", "pods", f"--token={dave}", "-n", NAMESPACE)
    assert can.stdout.strip() == "yes"
    result = team.kubectl(
        "create",
        "rolebinding",
        "pwn",
        "--clusterrole=cluster-admin",
        "--user=dave",
        f"--token={dave}",
        "-n",
        NAMESPACE,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io is "
        'forbidden: User "dave" cannot create resource "rolebindings" in API group '
        f'"rbac.authorization.k8s.io" in the namespace "{NAMESPACE}"'
    )
    # An admin of the namespace may write bindings, and still not hand out cluster-admin.
    team.kubectl(
        "create", "rolebinding", "erin-admin", "--clusterrole=admin", "--user=erin", "-n", NAMESPACE
    )
    erin = token(team, "erin")
    result = team.kubectl(
        "create",
        "rolebinding",
        "pwn",
        "--clusterrole=cluster-admin",
        "--user=erin",
        f"--token={erin}",
        "-n",
        NAMESPACE,
        check=False,
    )
    assert result.returncode == 1
    assert (
        'rolebindings.rbac.authorization.k8s.io "pwn" is forbidden: user "erin" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        "currently held:\n"
    ) in result.stderr
    team.kubectl(
        "create",
        "rolebinding",
        "share",
        "--clusterrole=edit",
        "--user=frank",
        f"--token={erin}",
        "-n",
        NAMESPACE,
    )


def test_kubectl_get_prints_roles_and_bindings(team: Cluster) -> None:
    roles = team.kubectl("get", "clusterroles").stdout
    assert roles.splitlines()[0].split() == ["NAME", "CREATED", "AT"]
    assert any(line.split()[0] == "cluster-admin" for line in roles.splitlines()[1:])
    wide = team.kubectl("get", "rolebindings", "-n", NAMESPACE, "-o", "wide").stdout
    assert wide.splitlines()[0].split() == [
        "NAME",
        "ROLE",
        "AGE",
        "USERS",
        "GROUPS",
        "SERVICEACCOUNTS",
    ]
    row = next(line for line in wide.splitlines() if line.startswith("app-view"))
    assert "ClusterRole/view" in row and f"{NAMESPACE}/app" in row


def test_each_controller_writes_as_its_own_service_account(cluster: Cluster) -> None:
    """`inplace up` runs the controller manager with --use-service-account-credentials: it
    makes one kube-system account per controller, each holding only its role."""
    wanted = {
        "replicaset-controller",
        "deployment-controller",
        "job-controller",
        "generic-garbage-collector",
        "node-controller",
        "workload-resize-controller",
    }

    def accounts() -> bool:
        listed = cluster.kubectl("get", "serviceaccounts", "-n", "kube-system", "-o", "name")
        return wanted <= {line.split("/", 1)[1] for line in listed.stdout.split()}

    wait_until(accounts, timeout=60, what="the controllers' service accounts")
    sa = "system:serviceaccount:kube-system:workload-resize-controller"
    rows = access_lines(cluster.kubectl("auth", "can-i", "--list", f"--as={sa}").stdout)
    assert rows["pods/resize"] == {"patch"}
    assert rows["pods/eviction"] == {"create"}
    assert rows["deployments.apps/status"] == {"patch"}
    assert rows["jobs.batch/status"] == {"patch"}
    assert "pods" not in rows and "deployments.apps" not in rows
    job = "system:serviceaccount:kube-system:job-controller"
    can = cluster.kubectl("auth", "can-i", "create", "pods", f"--as={job}", "-n", "x")
    assert can.stdout.strip() == "yes"
    cannot = cluster.kubectl("auth", "can-i", "create", "namespaces", f"--as={job}", check=False)
    assert cannot.stdout.strip() == "no"
