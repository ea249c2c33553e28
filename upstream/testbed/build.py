"""``scripts/upstream build``: the upstream components, built from their Go modules, cached.

The Go module beside this package (``upstream/go.mod``) pins one Kubernetes release and the
etcd it was tested with; this builds kube-apiserver, kube-controller-manager, kube-scheduler
and etcd from it, static (``CGO_ENABLED=0``) and with the release named in their version. Helm
(``helm``, which installs the operator's chart) comes from a second module,
``upstream/helm/go.mod``: its release requires newer k8s.io modules than the pinned
Kubernetes, and one module would build one of them at the other's versions. All five go into
one cache directory outside the repository, keyed by everything that decides the binaries
(both modules' go.mod and go.sum, the Go version, the flags). A second run finds them there
and returns at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Binaries", "BuildError", "build", "cache_root", "helm_module_dir", "module_dir"]

module_dir = Path(__file__).resolve().parent.parent
"""``upstream/``: the Go module of the control plane."""

helm_module_dir = module_dir / "helm"
"""``upstream/helm/``: the Go module of Helm."""

_KUBERNETES = "k8s.io/kubernetes"
_ETCD = "go.etcd.io/etcd/server/v3"
_HELM = "helm.sh/helm/v4"


@dataclass(frozen=True)
class _Target:
    """One binary: its main package, the module that publishes it, the module built in."""

    package: str
    module: str
    directory: Path


_TARGETS = {
    "kube-apiserver": _Target(f"{_KUBERNETES}/cmd/kube-apiserver", _KUBERNETES, module_dir),
    "kube-controller-manager": _Target(
        f"{_KUBERNETES}/cmd/kube-controller-manager", _KUBERNETES, module_dir
    ),
    "kube-scheduler": _Target(f"{_KUBERNETES}/cmd/kube-scheduler", _KUBERNETES, module_dir),
    "etcd": _Target(_ETCD, _ETCD, module_dir),
    "helm": _Target(f"{_HELM}/cmd/helm", _HELM, helm_module_dir),
}


class BuildError(Exception):
    """A build step failed; the message names the module and carries Go's own output."""


@dataclass(frozen=True)
class Binaries:
    """Where the built components are, and what they were built from."""

    directory: Path
    kubernetes: str
    """The pinned release, e.g. ``v1.36.3``."""
    etcd: str
    helm: str
    go: str

    def path(self, name: str) -> Path:
        """A binary by name: ``kube-apiserver`` … ``etcd``, ``helm``."""
        return self.directory / name


def cache_root() -> Path:
    """``$INPLACE_UPSTREAM_CACHE``, else ``$XDG_CACHE_HOME/inplace/upstream`` (``~/.cache``)."""
    explicit = os.environ.get("INPLACE_UPSTREAM_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "inplace" / "upstream"


def _go() -> str:
    # PATH first; else where the official archive installs it (a shell's profile adds that
    # to PATH, a CI runner's environment may not)
    go = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")
    if go is None:
        raise BuildError(
            "the upstream test bed builds Kubernetes from its Go modules and needs Go ≥ 1.26 "
            "on PATH (Debian: apt-get install golang-1.26, or https://go.dev/dl); none found"
        )
    return go


def _required_version(module: str, directory: Path = module_dir) -> str:
    go_mod = directory / "go.mod"
    for line in go_mod.read_text().splitlines():
        words = line.split()
        if words[:1] == [module] and len(words) >= 2:
            return words[1]
        if words[:2] == ["require", module] and len(words) >= 3:
            return words[2]
    raise BuildError(f"{go_mod.relative_to(module_dir.parent)} does not require {module}")


def _go_version(go: str) -> str:
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _ldflags(kubernetes: str) -> str:
    major, minor = kubernetes.lstrip("v").split(".")[:2]
    pkg = "k8s.io/component-base/version"
    return " ".join(
        [
            "-s",
            "-w",
            f"-X {pkg}.gitVersion={kubernetes}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
        ]
    )


def _helm_ldflags(helm: str) -> str:
    """What Helm's Makefile sets for a tagged release: the version, no ``unreleased``
    metadata, a clean tree. Its ``gitCommit`` (``git rev-parse HEAD``) stays empty: the
    module proxy serves the tag's source, not its commit."""
    pkg = f"{_HELM}/internal/version"
    return " ".join(
        [
            "-w",
            "-s",
            f"-X {pkg}.version={helm}",
            f"-X {pkg}.metadata=",
            f"-X {pkg}.gitTreeState=clean",
        ]
    )


def _key(go_version: str, *ldflags: str) -> str:
    digest = hashlib.sha256()
    for directory in (module_dir, helm_module_dir):
        for name in ("go.mod", "go.sum"):
            digest.update((directory / name).read_bytes())
    digest.update(go_version.encode())
    for flags in ldflags:
        digest.update(flags.encode())
    return digest.hexdigest()[:16]


def build(*, log: bool = True) -> Binaries:
    """Build the five binaries unless the cache has them; return where they are. Concurrent
    callers (pytest workers) wait for one build instead of each starting its own."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(log)


def _build(log: bool) -> Binaries:
    go = _go()
    kubernetes = _required_version(_KUBERNETES)
    etcd = _required_version(_ETCD)
    helm = _required_version(_HELM, helm_module_dir)
    go_version = _go_version(go)
    ldflags = _ldflags(kubernetes)
    helm_ldflags = _helm_ldflags(helm)
    versions = {_KUBERNETES: kubernetes, _ETCD: etcd, _HELM: helm}
    directory = cache_root() / f"{kubernetes}-{_key(go_version, ldflags, helm_ldflags)}"
    stamp = directory / "build.json"
    binaries = Binaries(directory, kubernetes, etcd, helm, go_version)
    if stamp.exists() and all((directory / name).exists() for name in _TARGETS):
        if log:
            _say(f"cached in {directory}: {_summary(binaries)}")
        return binaries
    directory.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=directory.parent))
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    started = time.monotonic()
    seconds: dict[str, float] = {}
    try:
        for name, target in _TARGETS.items():
            if log:
                _say(f"building {name} from {target.package} ...")
            one = time.monotonic()
            flags = helm_ldflags if target.module == _HELM else ldflags
            output = str(scratch / name)
            result = subprocess.run(
                [go, "build", "-trimpath", "-ldflags", flags, "-o", output, target.package],
                cwd=target.directory,
                env=env,
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                raise BuildError(
                    f"building {name} ({target.module} {versions[target.module]}, "
                    f"package {target.package}) failed with {go_version}:\n"
                    f"{result.stderr.strip() or result.stdout.strip()}"
                )
            seconds[name] = round(time.monotonic() - one, 1)
            if log:
                _say(f"  {name}: {seconds[name]:.0f} s")
        (scratch / "build.json").write_text(
            json.dumps(
                {
                    "kubernetes": kubernetes,
                    "etcd": etcd,
                    "helm": helm,
                    "go": go_version,
                    "seconds": round(time.monotonic() - started, 1),
                    "binaries": seconds,
                },
                indent=2,
            )
        )
        if directory.exists():
            shutil.rmtree(directory)
        scratch.rename(directory)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if log:
        _say(f"built in {time.monotonic() - started:.0f} s into {directory}: {_summary(binaries)}")
    return binaries


def _summary(binaries: Binaries) -> str:
    return (
        f"kube-apiserver, kube-controller-manager, kube-scheduler {binaries.kubernetes} "
        f"({_KUBERNETES} {binaries.kubernetes}), etcd {binaries.etcd} ({_ETCD} "
        f"{binaries.etcd}), helm {binaries.helm} ({_HELM} {binaries.helm}), {binaries.go}"
    )


def _say(text: str) -> None:
    print(f"upstream: {text}", file=sys.stderr, flush=True)
