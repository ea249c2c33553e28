"""OCI image archives written without a daemon or a registry: what ``ctr images import`` and
``skopeo copy oci-archive:…`` read.

An image here is uncompressed layers (tar files, each made from a directory tree with
ownership and times normalised, so the same tree gives the same digest), a config
(``os``, ``architecture``, the entrypoint, ``rootfs.diff_ids``), a manifest and an
``index.json`` whose one entry is annotated with the image's full reference
(``io.containerd.image.name``, which ``ctr`` imports it under, and
``org.opencontainers.image.ref.name``, the tag skopeo reads). Python's ``tarfile`` and
``hashlib`` are all it takes; a tool such as umoci or buildah would add a dependency for a
format this small.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Image", "file_layer", "layer_from_tree", "write_archive"]

_LAYER = "application/vnd.oci.image.layer.v1.tar"
_CONFIG = "application/vnd.oci.image.config.v1+json"
_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
_INDEX = "application/vnd.oci.image.index.v1+json"
_EPOCH = 0
"""Every file's mtime in a layer: the same tree gives the same layer digest."""


@dataclass(frozen=True)
class Image:
    """An archive written by :func:`write_archive`: where it is, its name and digests."""

    path: Path
    name: str
    manifest_digest: str
    size: int
    """Bytes of its layers (uncompressed), as ``ctr images ls`` reports an image's size."""


def _digest_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}", path.stat().st_size


def layer_from_tree(
    root: Path,
    out: Path,
    *,
    owner: tuple[int, int] = (0, 0),
    owned: Mapping[str, tuple[int, int]] | None = None,
) -> Path:
    """Tar the tree under ``root`` into ``out`` as one layer: paths relative to ``root``,
    sorted, every entry owned by ``owner`` (``owned`` gives another owner to a path and
    everything under it, e.g. a home directory), mtimes zeroed. Symlinks stay symlinks."""
    owned = dict(owned or {})

    def owner_of(relative: str) -> tuple[int, int]:
        for prefix, ids in owned.items():
            if relative == prefix or relative.startswith(prefix.rstrip("/") + "/"):
                return ids
        return owner

    entries: list[Path] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(directory)
        entries.extend(base / name for name in dirnames)
        entries.extend(base / name for name in sorted(filenames))
    entries.sort(key=lambda path: path.relative_to(root).as_posix())
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in entries:
            relative = path.relative_to(root).as_posix()
            info = tar.gettarinfo(str(path), arcname=relative)
            info.uid, info.gid = owner_of(relative)
            info.uname = info.gname = ""
            info.mtime = _EPOCH
            info.pax_headers = {}
            if info.isreg():
                with open(path, "rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
    return out


def _blob(blobs: Path, payload: bytes) -> tuple[str, int]:
    digest = "sha256:" + hashlib.sha256(payload).hexdigest()
    (blobs / digest.split(":", 1)[1]).write_bytes(payload)
    return digest, len(payload)


def write_archive(
    path: Path,
    *,
    name: str,
    layers: Sequence[Path],
    entrypoint: Sequence[str] = (),
    cmd: Sequence[str] = (),
    env: Iterable[str] = (),
    user: str = "",
    working_dir: str = "",
    labels: Mapping[str, str] | None = None,
    architecture: str = "amd64",
) -> Image:
    """Write the image ``name`` (a full reference, ``registry/repository:tag``) made of
    ``layers`` (tar files, bottom first) to the OCI archive ``path``."""
    with tempfile.TemporaryDirectory(prefix=".oci-", dir=path.parent) as scratch:
        layout = Path(scratch)
        blobs = layout / "blobs" / "sha256"
        blobs.mkdir(parents=True)
        descriptors: list[dict[str, Any]] = []
        size = 0
        for layer in layers:
            digest, length = _digest_file(layer)
            target = blobs / digest.split(":", 1)[1]
            if not target.exists():
                shutil.copyfile(layer, target)
            descriptors.append({"mediaType": _LAYER, "digest": digest, "size": length})
            size += length
        config: dict[str, Any] = {
            "architecture": architecture,
            "os": "linux",
            "config": {
                key: value
                for key, value in {
                    "Entrypoint": list(entrypoint),
                    "Cmd": list(cmd),
                    "Env": list(env),
                    "User": user,
                    "WorkingDir": working_dir,
                    "Labels": dict(labels or {}),
                }.items()
                if value
            },
            "rootfs": {"type": "layers", "diff_ids": [d["digest"] for d in descriptors]},
            "history": [{"created_by": "inplace upstream/testbed/oci.py"} for _ in descriptors],
        }
        config_digest, config_size = _blob(blobs, _canonical(config))
        manifest = {
            "schemaVersion": 2,
            "mediaType": _MANIFEST,
            "config": {"mediaType": _CONFIG, "digest": config_digest, "size": config_size},
            "layers": descriptors,
        }
        manifest_digest, manifest_size = _blob(blobs, _canonical(manifest))
        tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
        index = {
            "schemaVersion": 2,
            "mediaType": _INDEX,
            "manifests": [
                {
                    "mediaType": _MANIFEST,
                    "digest": manifest_digest,
                    "size": manifest_size,
                    "annotations": {
                        "io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": tag,
                    },
                    "platform": {"architecture": architecture, "os": "linux"},
                }
            ],
        }
        (layout / "index.json").write_bytes(_canonical(index))
        (layout / "oci-layout").write_bytes(_canonical({"imageLayoutVersion": "1.0.0"}))
        partial = path.with_name(path.name + ".partial")
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
            for entry in ("oci-layout", "index.json", "blobs"):
                tar.add(layout / entry, arcname=entry, filter=_normalise)
        partial.rename(path)
    return Image(path=path, name=name, manifest_digest=manifest_digest, size=size)


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = _EPOCH
    return info


def _canonical(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def file_layer(out: Path, files: Mapping[str, bytes | tuple[bytes, int]]) -> Path:
    """A layer of a few files given as bytes (``(bytes, mode)`` for a mode other than 0644),
    with their parent directories: for images as small as the sandbox's."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        made: set[str] = set()
        for name in sorted(files):
            parts = name.strip("/").split("/")
            for depth in range(1, len(parts)):
                directory = "/".join(parts[:depth])
                if directory not in made:
                    made.add(directory)
                    info = tarfile.TarInfo(directory)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, _EPOCH
                    tar.addfile(info)
            value = files[name]
            payload, mode = value if isinstance(value, tuple) else (value, 0o644)
            info = tarfile.TarInfo(name.strip("/"))
            info.size, info.mode, info.mtime = len(payload), mode, _EPOCH
            tar.addfile(info, io.BytesIO(payload))
    return out
