"""The kube-api-access volume, as upstream's ServiceAccount admission plugin adds it."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.token_volume import (
    TOKEN_MOUNT_PATH,
    mount_service_account_token,
    should_automount,
    token_volume_source,
)
from inplace.registry.lifecycle import admit_pod_service_account


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {
            "initContainers": [{"name": "init"}],
            "containers": [
                {"name": "a"},
                {"name": "b", "volumeMounts": [{"name": "x", "mountPath": "/x"}]},
            ],
            **spec,
        },
    }


def test_every_container_mounts_one_new_volume() -> None:
    p = pod()
    mount_service_account_token(p, suffix=lambda: "abcde")
    assert p["spec"]["volumes"] == [
        {"name": "kube-api-access-abcde", "projected": token_volume_source()}
    ]
    mount = {"name": "kube-api-access-abcde", "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
    assert p["spec"]["initContainers"][0]["volumeMounts"] == [mount]
    assert p["spec"]["containers"][0]["volumeMounts"] == [mount]
    assert p["spec"]["containers"][1]["volumeMounts"][-1] == mount
    sources = token_volume_source()
    assert sources["defaultMode"] == 0o644
    assert sources["sources"][0] == {
        "serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}
    }
    assert sources["sources"][1]["configMap"]["name"] == "kube-root-ca.crt"


def test_an_existing_mount_or_volume_is_kept() -> None:
    p = pod()
    p["spec"]["containers"][0]["volumeMounts"] = [{"name": "mine", "mountPath": TOKEN_MOUNT_PATH}]
    p["spec"]["volumes"] = [{"name": "kube-api-access-zzzzz", "projected": {"sources": []}}]
    mount_service_account_token(p, suffix=lambda: "abcde")
    assert [v["name"] for v in p["spec"]["volumes"]] == ["kube-api-access-zzzzz"]
    assert p["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "mine", "mountPath": TOKEN_MOUNT_PATH}
    ]
    assert p["spec"]["containers"][1]["volumeMounts"][-1]["name"] == "kube-api-access-zzzzz"


@pytest.mark.parametrize(
    ("pod_choice", "account_choice", "expected"),
    [
        (None, None, True),
        (False, None, False),
        (None, False, False),
        (True, False, True),
        (False, True, False),
    ],
)
def test_the_pods_choice_wins_then_the_accounts(
    pod_choice: bool | None, account_choice: bool | None, expected: bool
) -> None:
    p = pod(**({} if pod_choice is None else {"automountServiceAccountToken": pod_choice}))
    account = {} if account_choice is None else {"automountServiceAccountToken": account_choice}
    assert should_automount(p, account) is expected


class Accounts:
    """The ObjectReader the admission step reads service accounts through."""

    def __init__(self, **accounts: dict[str, Any]) -> None:
        self.accounts = accounts

    def get(
        self, group: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        return self.accounts.get(name) if kind == "ServiceAccount" else None

    def list(self, group: str, kind: str) -> list[dict[str, Any]]:
        return []


def test_admission_mounts_the_accounts_token_and_its_pull_secrets() -> None:
    p = pod()
    admit_pod_service_account(p, Accounts(default={"imagePullSecrets": [{"name": "reg"}]}))
    assert p["spec"]["serviceAccountName"] == "default"
    assert p["spec"]["imagePullSecrets"] == [{"name": "reg"}]
    assert [v["name"][:16] for v in p["spec"]["volumes"]] == ["kube-api-access-"]

    quiet = pod(serviceAccountName="robot")
    admit_pod_service_account(quiet, Accounts(robot={"automountServiceAccountToken": False}))
    assert "volumes" not in quiet["spec"]
