"""The node's volume manager: a pod's volumes on the host, and the mounts of its sandbox.

Each volume gets kubelet's directory, ``<data-dir>/pods/<uid>/volumes/<plugin>/<name>``:

* ``emptyDir``: a directory (mode 0777), or with ``medium: Memory`` a tmpfs that exists only
  in the pod's mount namespace, sized as upstream sizes it (:func:`memory_volume_size`), its
  pages charged to the memory cgroup of the container that writes them;
* ``configMap``, ``secret``, ``downwardAPI``, ``projected``: files written by the atomic
  writer (:mod:`.writer`) from :mod:`.payload`, rewritten whenever :meth:`refresh` finds
  the objects or the pod's metadata changed;
* ``hostPath``: the host path itself, checked against its ``type`` (and created for the
  ``…OrCreate`` types, as upstream);
* ``persistentVolumeClaim``: the bound PersistentVolume's ``hostPath``/``local`` path.

The ``fsGroup`` of the pod owns them (:mod:`.ownership`; not hostPath, as upstream). The
mounts of every container of the pod are merged into one list (one namespace per pod): two
containers that mount different things at the same path cannot both be honoured, and are
refused.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from inplace.api.quantity import Quantity, read_quantity

from ..shim.paths import resolve_in_root
from .ownership import set_volume_ownership
from .paths import PLUGIN_DIRS, expand_subpath_expr, memory_volume_size, subpath_error
from .payload import ObjectReader, Projection, SourceError, TokenSource, volume_payload
from .writer import FileProjection, PayloadError, write_payload

__all__ = ["ClaimReader", "PodVolumes", "VolumeError", "VolumeManager", "container_mounts"]


class VolumeError(Exception):
    """A volume cannot be set up now (kubelet's ``FailedMount``); retried."""

    def __init__(self, volume: str, message: str) -> None:
        super().__init__(f'MountVolume.SetUp failed for volume "{volume}" : {message}')
        self.volume = volume


class ClaimReader(Protocol):
    """The host path of the PersistentVolume bound to a claim (VolumeError if none yet)."""

    async def host_path(self, namespace: str, claim: str) -> str: ...


@dataclass
class PodVolumes:
    """A pod's volumes on the host: name → host path, and the tmpfs to create in its
    namespace (host path → mount options)."""

    sources: dict[str, str] = field(default_factory=dict)
    tmpfs: dict[str, str] = field(default_factory=dict)
    readonly_volumes: set[str] = field(default_factory=set)


_HOST_PATH_TYPES = {
    "Directory": stat.S_ISDIR,
    "File": stat.S_ISREG,
    "Socket": stat.S_ISSOCK,
    "CharDevice": stat.S_ISCHR,
    "BlockDevice": stat.S_ISBLK,
}


def check_host_path(name: str, path: str, kind: str) -> None:
    """Upstream's hostPath type checker (and creator for ``…OrCreate``)."""
    if kind == "DirectoryOrCreate":
        if not os.path.exists(path):
            os.makedirs(path, 0o755, exist_ok=True)
        kind = "Directory"
    elif kind == "FileOrCreate":
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path) or "/", 0o755, exist_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
        kind = "File"
    if not kind:
        return
    test = _HOST_PATH_TYPES.get(kind)
    if test is None:
        raise VolumeError(name, f"unsupported hostPath type {kind!r}")
    try:
        st = os.stat(path)
    except OSError:
        raise VolumeError(
            name, f"hostPath type check failed: {path} is not a {kind.lower()}"
        ) from None
    if not test(st.st_mode):
        raise VolumeError(name, f"hostPath type check failed: {path} is not a {kind.lower()}")


def container_mounts(
    pod: Mapping[str, Any],
    volumes: PodVolumes,
    env_of: Mapping[str, Mapping[str, str]],
) -> list[dict[str, Any]]:
    """Every container's volumeMounts as one list of mounts for the pod's namespace
    (subPath resolved inside its volume, subPathExpr expanded with the container's
    environment), parents before children. Raises ValueError for what cannot be honoured."""
    spec = pod.get("spec") or {}
    by_target: dict[str, dict[str, Any]] = {}
    owners: dict[str, str] = {}
    for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        cname = str(c.get("name"))
        for m in c.get("volumeMounts") or ():
            vname = str(m.get("name"))
            base = volumes.sources.get(vname)
            if base is None:
                raise ValueError(f'container {cname}: volumeMount "{vname}" names no volume')
            sub = str(m.get("subPath") or "")
            if m.get("subPathExpr"):
                sub = expand_subpath_expr(str(m["subPathExpr"]), env_of.get(cname, {}))
            if sub:
                problem = subpath_error(sub)
                if problem:
                    raise ValueError(
                        f'failed to prepare subPath for volumeMount "{vname}" of container '
                        f'"{cname}": {problem}'
                    )
            target = os.path.normpath("/" + str(m.get("mountPath", "")).lstrip("/"))
            entry = {
                "target": target,
                "source": base,
                "subpath": sub,
                "readonly": bool(m.get("readOnly")) or vname in volumes.readonly_volumes,
                "in_tmpfs": base in volumes.tmpfs,
            }
            prev = by_target.get(target)
            if prev is not None and prev != entry:
                raise ValueError(
                    f"containers {owners[target]} and {cname} mount different volumes (or "
                    f"modes) at {target}: containers of a pod share one mount namespace here"
                )
            by_target[target] = entry
            owners.setdefault(target, cname)
    return [by_target[t] for t in sorted(by_target, key=lambda t: (t.count("/"), t))]


def resolve_subpaths(mounts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The host source of each mount: ``subpath`` resolved inside its volume (symlinks cannot
    leave it) and created as a directory (0750) when missing, as kubelet does. Sources in a
    memory volume exist only in the namespace: the sandbox builder makes those."""
    out = []
    for m in mounts:
        source = m["source"]
        mkdir = False
        if m["subpath"]:
            source = resolve_in_root(m["source"], m["subpath"])
            if m["in_tmpfs"]:
                mkdir = True
            elif not os.path.lexists(source):
                os.makedirs(source, 0o750, exist_ok=True)
        out.append(
            {"target": m["target"], "source": source, "readonly": m["readonly"], "mkdir": mkdir}
        )
    return out


class VolumeManager:
    """Sets up, refreshes and removes the volumes of the pods of one node."""

    def __init__(
        self,
        data_dir: Path,
        objects: ObjectReader,
        claims: ClaimReader,
        *,
        node_memory: int,
        node_cpu_milli: int,
        tokens: TokenSource | None = None,
    ) -> None:
        self.root = data_dir / "pods"
        #: Pod directories on their way out (see :meth:`teardown`).
        self.trash = data_dir / "pods-trash"
        self.objects = objects
        self.claims = claims
        self.tokens = tokens
        self.node_memory = node_memory
        self.node_cpu_milli = node_cpu_milli
        #: What each written volume's directory holds (its path → the payload last written
        #: or found there): a refresh whose payload is the same skips the disk.
        self._written: dict[str, dict[str, FileProjection]] = {}

    def pod_dir(self, uid: str) -> Path:
        return self.root / uid

    def volume_dir(self, uid: str, plugin: str, name: str) -> Path:
        return self.pod_dir(uid) / "volumes" / PLUGIN_DIRS[plugin] / name

    def _projection(self, pod: Mapping[str, Any]) -> Projection:
        allocatable = {
            "cpu": Quantity.from_milli(self.node_cpu_milli),
            "memory": Quantity.from_int(self.node_memory),
        }
        return Projection(pod, self.objects, allocatable, tokens=self.tokens)

    async def setup(self, pod: Mapping[str, Any], pod_memory_limit: int | None) -> PodVolumes:
        """Make every volume of ``pod`` exist on the host (VolumeError when one cannot)."""
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        uid = str(meta.get("uid"))
        pod_sc = spec.get("securityContext") or {}
        fs_group = pod_sc.get("fsGroup")
        policy = pod_sc.get("fsGroupChangePolicy")
        self.root.mkdir(mode=0o750, parents=True, exist_ok=True)
        result = PodVolumes()
        for volume in spec.get("volumes") or ():
            name = str(volume.get("name"))
            if volume.get("emptyDir") is not None:
                path = self.volume_dir(uid, "emptyDir", name)
                body = volume["emptyDir"] or {}
                await asyncio.to_thread(path.mkdir, mode=0o777, parents=True, exist_ok=True)
                if body.get("medium") == "Memory":
                    size_limit = read_quantity(body.get("sizeLimit"))
                    size = memory_volume_size(self.node_memory, pod_memory_limit, size_limit)
                    mode, group = (
                        ("2777", f",gid={fs_group}")
                        if fs_group is not None
                        else (
                            "777",
                            "",
                        )
                    )
                    result.tmpfs[str(path)] = f"mode={mode},size={size}{group}"
                else:
                    os.chmod(path, 0o777)
                    await asyncio.to_thread(set_volume_ownership, str(path), fs_group)
                result.sources[name] = str(path)
            elif volume.get("hostPath") is not None:
                body = volume["hostPath"]
                host = str(body.get("path", ""))
                await asyncio.to_thread(check_host_path, name, host, str(body.get("type") or ""))
                result.sources[name] = host
            elif volume.get("persistentVolumeClaim") is not None:
                body = volume["persistentVolumeClaim"]
                host = await self.claims.host_path(
                    str(meta.get("namespace")), str(body.get("claimName"))
                )
                await asyncio.to_thread(set_volume_ownership, host, fs_group, policy=policy)
                result.sources[name] = host
                if body.get("readOnly"):
                    result.readonly_volumes.add(name)
            else:
                path_text = await self._write_projected(pod, volume, uid, fs_group)
                if path_text is None:
                    raise VolumeError(name, "volume type not supported by this node")
                result.sources[name] = path_text
                result.readonly_volumes.add(name)
        return result

    async def _write_projected(
        self, pod: Mapping[str, Any], volume: Mapping[str, Any], uid: str, fs_group: Any
    ) -> str | None:
        name = str(volume.get("name"))
        try:
            made = await volume_payload(self._projection(pod), volume)
        except SourceError as exc:
            raise VolumeError(name, str(exc)) from None
        if made is None:
            return None
        kind, payload = made
        target = self.volume_dir(uid, kind, name)
        if self._written.get(str(target)) == payload:
            # Every pod event refreshes its volumes: comparing with the disk took a thread
            # walking and reading the directory, whose GIL hand-offs held up the agent's
            # loop (a resize's cgroup write waited ~1 ms behind them).
            return str(target)

        def set_perms(directory: str) -> None:
            set_volume_ownership(directory, fs_group, readonly=True)

        try:
            await asyncio.to_thread(
                write_payload,
                str(target),
                payload,
                set_perms=set_perms if fs_group is not None else None,
            )
        except (PayloadError, OSError) as exc:
            self._written.pop(str(target), None)
            raise VolumeError(name, str(exc)) from None
        self._written[str(target)] = dict(payload)
        return str(target)

    async def refresh(self, pod: Mapping[str, Any]) -> list[VolumeError]:
        """Rewrite the atomic-writer volumes whose content changed; the errors, if any."""
        errors = []
        uid = str((pod.get("metadata") or {}).get("uid"))
        fs_group = ((pod.get("spec") or {}).get("securityContext") or {}).get("fsGroup")
        for volume in (pod.get("spec") or {}).get("volumes") or ():
            if not any(
                volume.get(k) is not None
                for k in ("configMap", "secret", "downwardAPI", "projected")
            ):
                continue
            try:
                await self._write_projected(pod, volume, uid, fs_group)
            except VolumeError as exc:
                errors.append(exc)
        return errors

    def forget_tokens(self, uid: str) -> None:
        """Stop refreshing the service account tokens of a pod that is going (on the loop)."""
        forget = getattr(self.tokens, "forget", None)
        if forget is not None:
            forget(uid)

    def teardown(self, uid: str) -> None:
        """Remove the pod's directory (its disk emptyDirs, written volumes and containers'
        layers): moved into the trash at once (a rename), emptied by :meth:`empty_trash`
        off the pod's deletion path (a container's layer alone is some hundred directories,
        ~10 ms to remove)."""
        source = self.pod_dir(uid)
        prefix = f"{source}{os.sep}"
        for target in [t for t in self._written if t.startswith(prefix)]:
            del self._written[target]
        if not source.exists():
            return
        self.trash.mkdir(parents=True, exist_ok=True)
        try:
            source.rename(self.trash / f"{uid}-{uuid.uuid4().hex[:8]}")
        except OSError:  # a mount point, another file system: removed where it is
            shutil.rmtree(source, ignore_errors=True)

    def empty_trash(self) -> None:
        """Remove what :meth:`teardown` moved aside (also what an agent stopped before it
        was done left there)."""
        if self.trash.is_dir():
            for entry in self.trash.iterdir():
                shutil.rmtree(entry, ignore_errors=True)
