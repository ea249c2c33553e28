"""The service account credentials a pod mounts: upstream's ServiceAccount admission plugin's
``kube-api-access-*`` projected volume.

On create, a pod whose service account's credentials are mounted (``automountServiceAccount
Token``: the pod's choice, else the service account's, else yes) gets a projected volume with
a bound token (``token``, 3607 seconds, refreshed by the node), the cluster CA
(``ca.crt``, from the ``kube-root-ca.crt`` ConfigMap) and its namespace (``namespace``), mounted
read-only at ``/var/run/secrets/kubernetes.io/serviceaccount`` in every container and init
container that does not mount something there already (upstream's
``plugin/pkg/admission/serviceaccount``). That is the directory the client libraries'
in-cluster configuration reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from inplace.api.names import random_suffix

__all__ = [
    "ROOT_CA_CONFIG_MAP",
    "TOKEN_MOUNT_PATH",
    "TOKEN_VOLUME_PREFIX",
    "is_token_volume",
    "mount_service_account_token",
    "should_automount",
    "token_volume_source",
]

TOKEN_MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME_PREFIX: Final = "kube-api-access-"
ROOT_CA_CONFIG_MAP: Final = "kube-root-ca.crt"
#: kubelet's projected token lifetime (the API server extends it and warns after it).
TOKEN_EXPIRATION_SECONDS: Final = 3607


def should_automount(pod: Mapping[str, Any], account: Mapping[str, Any] | None) -> bool:
    """The pod's ``automountServiceAccountToken`` wins, then the service account's; yes by
    default."""
    own = (pod.get("spec") or {}).get("automountServiceAccountToken")
    if isinstance(own, bool):
        return own
    theirs = (account or {}).get("automountServiceAccountToken")
    if isinstance(theirs, bool):
        return theirs
    return True


def is_token_volume(volume: Any) -> bool:
    """Whether `volume` is the ``kube-api-access-*`` volume the admission step adds."""
    return (
        isinstance(volume, Mapping)
        and str(volume.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)
        and isinstance(volume.get("projected"), Mapping)
    )


def token_volume_source() -> dict[str, Any]:
    """Upstream ``TokenVolumeSource()``."""
    return {
        "defaultMode": 0o644,
        "sources": [
            {
                "serviceAccountToken": {
                    "expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                    "path": "token",
                }
            },
            {
                "configMap": {
                    "name": ROOT_CA_CONFIG_MAP,
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
    }


def mount_service_account_token(
    pod: dict[str, Any], suffix: Callable[[], str] = random_suffix
) -> None:
    """Upstream ``mountServiceAccountToken``: reuse a ``kube-api-access-*`` volume the pod
    has, else add one if any container needs it; mount it where no container mounts anything
    yet."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        volumes = []
    name = next(
        (
            str(v.get("name"))
            for v in volumes
            if isinstance(v, dict) and str(v.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)
        ),
        "",
    )
    has_volume = bool(name)
    name = name or TOKEN_VOLUME_PREFIX + suffix()
    needed = False
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts")
            if not isinstance(mounts, list):
                mounts = []
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                continue
            mounts.append({"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH})
            container["volumeMounts"] = mounts
            needed = True
    if needed and not has_volume:
        volumes.append({"name": name, "projected": token_volume_source()})
        spec["volumes"] = volumes
