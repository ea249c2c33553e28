"""Pure rules for where volumes live and how a volumeMount names its part of one."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final

__all__ = [
    "PLUGIN_DIRS",
    "expand_subpath_expr",
    "memory_volume_size",
    "subpath_error",
]

PLUGIN_DIRS: Final[Mapping[str, str]] = {
    "emptyDir": "kubernetes.io~empty-dir",
    "configMap": "kubernetes.io~configmap",
    "secret": "kubernetes.io~secret",
    "downwardAPI": "kubernetes.io~downward-api",
    "projected": "kubernetes.io~projected",
}
"""kubelet's ``pods/<uid>/volumes/<plugin>/<name>`` directory names."""

_VAR = re.compile(r"\$\$|\$\(([^)]*)\)")


def expand_subpath_expr(expr: str, env: Mapping[str, str]) -> str:
    """Upstream's ``expansion.Expand``: ``$(VAR)`` becomes the variable's value, ``$$`` a
    ``$``; a reference to an unknown variable stays as written."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _VAR.sub(replace, expr)


def subpath_error(subpath: str) -> str | None:
    """Why an (expanded) subPath cannot be used, or None (upstream's
    ``validateLocalDescendingPath``)."""
    if os.path.isabs(subpath):
        return "must be a relative path"
    if ".." in subpath.split("/"):
        return "must not contain '..'"
    return None


def memory_volume_size(
    node_allocatable: int, pod_memory_limit: int | None, size_limit: int | None
) -> int:
    """Upstream's ``calculateEmptyDirMemorySize``: node allocatable, lowered to the pod's
    memory limit and then to the volume's ``sizeLimit`` when they are positive and smaller."""
    size = node_allocatable
    if pod_memory_limit is not None and 0 < pod_memory_limit <= size:
        size = pod_memory_limit
    if size_limit is not None and 0 < size_limit <= size:
        size = size_limit
    return size
