"""Where the cluster is and how to prove who we are: kubeconfig and in-cluster configuration.

:func:`load_kubeconfig` reads the file kubectl reads (``$KUBECONFIG`` → ``~/.kube/config``) and
resolves one context into a :class:`ClusterConfig`; :func:`in_cluster_config` does the same from
the service-account files a pod gets; :func:`load_config` picks whichever applies.

A :class:`ClusterConfig` is plain data. Credentials embedded in the kubeconfig stay in memory:
the CA goes to :meth:`ssl.SSLContext.load_verify_locations` as ``cadata``; only a client
certificate/key pair given inline has to touch the disk, because :mod:`ssl` loads key pairs from
files only; it is written to a private temporary directory and removed as soon as it is loaded.

Token files (``tokenFile``, the in-cluster token) are re-read periodically, because bound
service-account tokens rotate while the process keeps running.

Exec credential plugins and auth-provider plugins are not supported; a user that relies on
them alone gets a :class:`~inplace.client.errors.ConfigError` saying so.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
import ssl
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "ClusterConfig",
    "in_cluster_config",
    "load_config",
    "load_kubeconfig",
]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where Kubernetes mounts a pod's service-account token, CA bundle and namespace."""

_TOKEN_REFRESH_SECONDS = 60.0


@dataclasses.dataclass(kw_only=True)
class ClusterConfig:
    """Everything needed to talk to one API server as one user."""

    server: str
    """Base URL of the API server, e.g. ``https://127.0.0.1:6443`` (no trailing slash)."""
    namespace: str = "default"
    """The context's default namespace (callers pass it explicitly; the client never guesses)."""
    ca_file: str | None = None
    """PEM file of CA certificates that verify the server (``certificate-authority``)."""
    ca_data: bytes | None = None
    """PEM CA certificates inline (``certificate-authority-data``, already base64-decoded)."""
    insecure_skip_tls_verify: bool = False
    """Do not verify the server certificate at all (``insecure-skip-tls-verify``)."""
    tls_server_name: str | None = None
    """Name to verify the server certificate against instead of the URL's host."""
    token: str | None = None
    """Bearer token (``token``)."""
    token_file: str | None = None
    """File holding a bearer token, re-read periodically (``tokenFile``, in-cluster token)."""
    client_cert_file: str | None = None
    """PEM client certificate file (``client-certificate``)."""
    client_key_file: str | None = None
    """PEM client key file (``client-key``)."""
    client_cert_data: bytes | None = None
    """PEM client certificate inline (``client-certificate-data``, decoded)."""
    client_key_data: bytes | None = None
    """PEM client key inline (``client-key-data``, decoded)."""
    username: str | None = None
    """HTTP basic auth user (legacy ``username``)."""
    password: str | None = None
    """HTTP basic auth password (legacy ``password``)."""
    context: str | None = None
    """Name of the kubeconfig context this came from (None in-cluster); for messages only."""
    source: str | None = None
    """File this configuration was read from; for messages only."""

    _token_cache: tuple[float, str] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )
    _lock: threading.Lock = dataclasses.field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self.server = self.server.rstrip("/")

    @property
    def is_https(self) -> bool:
        return self.server.lower().startswith("https://")

    def ssl_context(self) -> ssl.SSLContext | None:
        """Build the TLS context for this server and user (None for a plain-http server).

        Raises ConfigError naming the field when a certificate or key cannot be loaded.
        """
        if not self.is_https:
            return None
        where = self.source or "cluster config"
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, checks hostnames, TLS >= 1.2
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.insecure_skip_tls_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_data is None and self.ca_file is None:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        else:
            # As client-go: a configured CA replaces the system roots rather than adding to them.
            try:
                if self.ca_data is not None:
                    ctx.load_verify_locations(cadata=self.ca_data.decode("ascii"))
                if self.ca_file is not None:
                    ctx.load_verify_locations(cafile=self.ca_file)
            except (OSError, ssl.SSLError, UnicodeDecodeError) as exc:
                field = "certificate-authority-data" if self.ca_data else "certificate-authority"
                raise ConfigError(f"{where}: cannot load CA from {field}: {exc}") from exc

        cert_file, key_file = self.client_cert_file, self.client_key_file
        cert_data, key_data = self.client_cert_data, self.client_key_data
        if (cert_file or cert_data) and not (key_file or key_data):
            raise ConfigError(f"{where}: client-certificate is set but client-key is not")
        if (key_file or key_data) and not (cert_file or cert_data):
            raise ConfigError(f"{where}: client-key is set but client-certificate is not")
        if cert_file or cert_data:
            _load_client_pair(ctx, cert_file, cert_data, key_file, key_data, where)
        return ctx

    def bearer_token(self) -> str | None:
        """The bearer token to send now: ``token``, or the current content of ``token_file``."""
        if self.token:
            return self.token
        if not self.token_file:
            return None
        now = time.monotonic()
        with self._lock:
            cached = self._token_cache
            if cached is not None and now - cached[0] < _TOKEN_REFRESH_SECONDS:
                return cached[1]
            try:
                token = Path(self.token_file).read_text().strip()
            except OSError as exc:
                if cached is not None:  # keep using the last good token across a rotation blip
                    return cached[1]
                raise ConfigError(f"cannot read tokenFile {self.token_file}: {exc}") from exc
            self._token_cache = (now, token)
            return token

    def server_hostname(self) -> str | None:
        """SNI / verification name override (``tls-server-name``), if any."""
        return self.tls_server_name if self.is_https else None


def _load_client_pair(
    ctx: ssl.SSLContext,
    cert_file: str | None,
    cert_data: bytes | None,
    key_file: str | None,
    key_data: bytes | None,
    where: str,
) -> None:
    """Load a client cert + key, writing inline data to a private temp dir only for the load."""
    with tempfile.TemporaryDirectory(prefix="inplace-client-") as tmp:
        if cert_data is not None:
            cert_file = os.path.join(tmp, "client.crt")
            _write_private(cert_file, cert_data)
        if key_data is not None:
            key_file = os.path.join(tmp, "client.key")
            _write_private(key_file, key_data)
        assert cert_file is not None and key_file is not None
        try:
            ctx.load_cert_chain(certfile=cert_file, keyfile=key_file)
        except (OSError, ssl.SSLError) as exc:
            cert_field = "client-certificate-data" if cert_data else "client-certificate"
            key_field = "client-key-data" if key_data else "client-key"
            raise ConfigError(f"{where}: cannot load {cert_field} / {key_field}: {exc}") from exc


def _write_private(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def default_kubeconfig_path() -> Path:
    """``$KUBECONFIG`` (its first entry when it is a list) or ``~/.kube/config``."""
    env = os.environ.get("KUBECONFIG", "")
    for entry in env.split(os.pathsep):
        if entry.strip():
            return Path(entry.strip()).expanduser()
    return Path.home() / ".kube" / "config"


def load_kubeconfig(path: str | None = None, *, context: str | None = None) -> ClusterConfig:
    """Read a kubeconfig and resolve ``context`` (default: ``current-context``).

    ``path`` None means ``$KUBECONFIG`` (first file of a colon-separated list), then
    ``~/.kube/config``. Relative file references resolve against the kubeconfig's directory,
    as kubectl does. Raises ConfigError naming the file and field for anything unusable.
    """
    file = Path(path).expanduser() if path is not None else default_kubeconfig_path()
    where = str(file)
    try:
        text = file.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read kubeconfig {where}: {exc}") from exc
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a kubeconfig mapping")

    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise ConfigError(f"{where}: no context given and current-context is not set")
    ctx = _named(doc, "contexts", "context", ctx_name, where)
    cluster_name = ctx.get("cluster")
    if not cluster_name:
        raise ConfigError(f"{where}: context {ctx_name!r} has no cluster")
    cluster = _named(doc, "clusters", "cluster", cluster_name, where)
    user_name = ctx.get("user")
    user = _named(doc, "users", "user", user_name, where) if user_name else {}

    base = file.parent
    server = cluster.get("server")
    if not server or not isinstance(server, str):
        raise ConfigError(f"{where}: cluster {cluster_name!r} has no server")

    def rel(value: Any, field: str) -> str | None:
        if value in (None, ""):
            return None
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {field} must be a string")
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else base / p)

    def data(value: Any, field: str) -> bytes | None:
        if value in (None, ""):
            return None
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {field} must be a base64 string")
        try:
            return base64.b64decode(value, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise ConfigError(f"{where}: {field} is not valid base64: {exc}") from exc

    c_prefix = f"clusters[{cluster_name}].cluster"
    u_prefix = f"users[{user_name}].user"
    token = user.get("token")
    cfg = ClusterConfig(
        server=server,
        namespace=str(ctx.get("namespace") or "default"),
        ca_file=rel(cluster.get("certificate-authority"), f"{c_prefix}.certificate-authority"),
        ca_data=data(
            cluster.get("certificate-authority-data"), f"{c_prefix}.certificate-authority-data"
        ),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
        tls_server_name=cluster.get("tls-server-name") or None,
        token=str(token) if token else None,
        token_file=rel(user.get("tokenFile"), f"{u_prefix}.tokenFile"),
        client_cert_file=rel(user.get("client-certificate"), f"{u_prefix}.client-certificate"),
        client_key_file=rel(user.get("client-key"), f"{u_prefix}.client-key"),
        client_cert_data=data(
            user.get("client-certificate-data"), f"{u_prefix}.client-certificate-data"
        ),
        client_key_data=data(user.get("client-key-data"), f"{u_prefix}.client-key-data"),
        username=user.get("username") or None,
        password=user.get("password") or None,
        context=str(ctx_name),
        source=where,
    )
    has_creds = any(
        (
            cfg.token,
            cfg.token_file,
            cfg.client_cert_file,
            cfg.client_cert_data,
            cfg.username,
        )
    )
    for plugin in ("exec", "auth-provider"):
        if user.get(plugin) and not has_creds:
            raise ConfigError(
                f"{where}: {u_prefix}.{plugin} credential plugins are not supported; "
                "use a token, tokenFile or client certificate"
            )
    if cfg.token_file and not os.path.exists(cfg.token_file):
        raise ConfigError(f"{where}: {u_prefix}.tokenFile {cfg.token_file} does not exist")
    return cfg


def _named(doc: dict[str, Any], section: str, inner: str, name: Any, where: str) -> dict[str, Any]:
    entries = doc.get(section) or []
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: {section} must be a list")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == name:
            value = entry.get(inner) or {}
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: {section}[{name}].{inner} must be a mapping")
            return value
    raise ConfigError(f"{where}: {section[:-1]} {name!r} not found in {section}")


def in_cluster_config(*, directory: Path | str = SERVICE_ACCOUNT_DIR) -> ClusterConfig:
    """Configuration for code running in a pod: the mounted service account and the
    ``KUBERNETES_SERVICE_HOST`` / ``KUBERNETES_SERVICE_PORT`` environment."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise ConfigError(
            "not running in a cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT unset"
        )
    sa = Path(directory)
    token_file = sa / "token"
    ca_file = sa / "ca.crt"
    if not token_file.is_file():
        raise ConfigError(f"in-cluster token file {token_file} does not exist")
    if not ca_file.is_file():
        raise ConfigError(f"in-cluster CA file {ca_file} does not exist")
    namespace = "default"
    try:
        namespace = (sa / "namespace").read_text().strip() or "default"
    except OSError:
        pass
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6 literal
    return ClusterConfig(
        server=f"https://{host}:{port}",
        namespace=namespace,
        ca_file=str(ca_file),
        token_file=str(token_file),
        source=str(sa),
    )


def load_config(path: str | None = None, *, context: str | None = None) -> ClusterConfig:
    """The configuration kubectl-like tools and controllers expect.

    An explicit ``path`` or ``$KUBECONFIG`` wins; otherwise in-cluster configuration when
    running in a pod; otherwise ``~/.kube/config``.
    """
    if path is not None or os.environ.get("KUBECONFIG") or context is not None:
        return load_kubeconfig(path, context=context)
    if os.environ.get("KUBERNETES_SERVICE_HOST") and (SERVICE_ACCOUNT_DIR / "token").is_file():
        return in_cluster_config()
    return load_kubeconfig()
