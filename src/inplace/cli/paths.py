"""Where `inplace up` keeps its state, and the files in it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


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

    def component_kubeconfig(self, name: str) -> Path:
        return self.components / f"{name}.kubeconfig"
