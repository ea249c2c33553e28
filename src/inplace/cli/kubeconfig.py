"""Write kubeconfig files for the admin and for each component."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml


def write_kubeconfig(path: Path, *, server: str, ca_pem: bytes, token: str, user: str) -> None:
    """A kubeconfig with one cluster, user and context, readable only by its owner."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "inplace",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": "inplace",
                "context": {"cluster": "inplace", "user": user, "namespace": "default"},
            }
        ],
        "current-context": "inplace",
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    tmp.replace(path)
