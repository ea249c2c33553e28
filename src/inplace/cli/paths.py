"""Where `inplace up` keeps its state, and the files in it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from inplace.api.storage import LOCAL_PATH_DIRECTORY


def default_data_dir() -> Path:
    """`$XDG_DATA_HOME/inplace`, else `~/.local/share/inplace`."""
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "inplace"


@dataclass(frozen=True)
class DataDir:
    root: Path

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig.yaml"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def tokens(self) -> Path:
        return self.root / "pki" / "tokens.csv"

    @property
    def components(self) -> Path:
        return self.root / "components"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def apiserver(self) -> Path:
        return self.root / "apiserver"

    @property
    def store(self) -> Path:
        """The API server's store (``inplace apiserver`` opens it there)."""
        return self.apiserver / "store.db"

    @property
    def store_lock(self) -> Path:
        """Locked by the process that has the store open (see :mod:`inplace.store`)."""
        return self.apiserver / "store.db.lock"

    @property
    def up_lock(self) -> Path:
        """Locked by the `inplace up` running on this data dir (:mod:`inplace.cli.lock`)."""
        return self.root / "up.lock"

    @property
    def nodes(self) -> Path:
        """The node agents' own data dirs (checkpoints, sandboxes, volumes)."""
        return self.root / "nodes"

    @property
    def storage(self) -> Path:
        """The local-path provisioner's volumes: ``pvc-<claim uid>`` directories."""
        return self.root / LOCAL_PATH_DIRECTORY

    def component_kubeconfig(self, name: str) -> Path:
        return self.components / f"{name}.kubeconfig"
