from __future__ import annotations

import base64
import os
import ssl
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from inplace.client import ClusterConfig, ConfigError, in_cluster_config, load_kubeconfig
from inplace.client import config as config_mod

from .certs import PKI


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write_kubeconfig(
    path: Path,
    *,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    context_extra: dict[str, Any] | None = None,
    current: str | None = "main",
) -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c1", "cluster": cluster or {"server": "https://127.0.0.1:6443/"}},
            {"name": "c2", "cluster": {"server": "http://other:8080"}},
        ],
        "users": [
            {"name": "u1", "user": user if user is not None else {"token": "abc"}},
            {"name": "u2", "user": {"token": "other-token"}},
        ],
        "contexts": [
            {"name": "main", "context": {"cluster": "c1", "user": "u1", **(context_extra or {})}},
            {"name": "other", "context": {"cluster": "c2", "user": "u2", "namespace": "ns2"}},
        ],
    }
    if current is not None:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def test_token_server_namespace(tmp_path: Path) -> None:
    p = write_kubeconfig(tmp_path / "config", context_extra={"namespace": "team-a"})
    cfg = load_kubeconfig(str(p))
    assert cfg.server == "https://127.0.0.1:6443"
    assert cfg.token == "abc"
    assert cfg.bearer_token() == "abc"
    assert cfg.namespace == "team-a"
    assert cfg.context == "main"
    assert cfg.source == str(p)


def test_explicit_context(tmp_path: Path) -> None:
    p = write_kubeconfig(tmp_path / "config")
    cfg = load_kubeconfig(str(p), context="other")
    assert cfg.server == "http://other:8080"
    assert cfg.namespace == "ns2"
    assert cfg.bearer_token() == "other-token"
    assert cfg.ssl_context() is None  # plain http


def test_default_namespace(tmp_path: Path) -> None:
    assert load_kubeconfig(str(write_kubeconfig(tmp_path / "c"))).namespace == "default"


def test_kubeconfig_env_colon_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = write_kubeconfig(tmp_path / "first")
    second = tmp_path / "second"  # does not exist: only the first entry is read
    monkeypatch.setenv("KUBECONFIG", f"{first}{os.pathsep}{second}")
    assert load_kubeconfig().source == str(first)


def test_home_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    write_kubeconfig(tmp_path / ".kube" / "config")
    assert load_kubeconfig().source == str(tmp_path / ".kube" / "config")


def test_token_file_relative_and_reread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tok").write_text("first\n")
    p = write_kubeconfig(tmp_path / "config", user={"tokenFile": "tok"})
    cfg = load_kubeconfig(str(p))
    assert cfg.token_file == str(tmp_path / "tok")
    assert cfg.bearer_token() == "first"
    (tmp_path / "tok").write_text("second\n")
    assert cfg.bearer_token() == "first"  # cached
    monkeypatch.setattr(config_mod, "_TOKEN_REFRESH_SECONDS", 0.0)
    assert cfg.bearer_token() == "second"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"current": None}, "current-context"),
        ({"context_extra": {"cluster": "nope"}}, "cluster 'nope' not found"),
        ({"context_extra": {"user": "ghost"}}, "user 'ghost' not found"),
        ({"cluster": {"insecure-skip-tls-verify": True}}, "has no server"),
        (
            {"cluster": {"server": "https://x", "certificate-authority-data": "!!!not b64"}},
            "certificate-authority-data",
        ),
        ({"user": {"exec": {"command": "aws"}}}, "exec credential plugins are not supported"),
        ({"user": {"tokenFile": "missing-token"}}, "tokenFile"),
    ],
)
def test_errors_name_file_and_field(tmp_path: Path, kwargs: dict[str, Any], needle: str) -> None:
    p = write_kubeconfig(tmp_path / "config", **kwargs)
    with pytest.raises(ConfigError) as info:
        load_kubeconfig(str(p))
    assert needle in str(info.value)
    assert str(p) in str(info.value)


def test_missing_context_and_file(tmp_path: Path) -> None:
    p = write_kubeconfig(tmp_path / "config")
    with pytest.raises(ConfigError, match="context 'nope' not found"):
        load_kubeconfig(str(p), context="nope")
    with pytest.raises(ConfigError, match="cannot read kubeconfig"):
        load_kubeconfig(str(tmp_path / "absent"))
    (tmp_path / "bad").write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_kubeconfig(str(tmp_path / "bad"))


def test_ca_and_client_cert_data(tmp_path: Path, pki: PKI, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    p = write_kubeconfig(
        tmp_path / "config",
        cluster={
            "server": "https://127.0.0.1:6443",
            "certificate-authority-data": b64(pki.ca.cert_pem),
            "tls-server-name": "kubernetes.default",
        },
        user={
            "client-certificate-data": b64(pki.client.cert_pem),
            "client-key-data": b64(pki.client.key_pem),
        },
    )
    cfg = load_kubeconfig(str(p))
    assert cfg.ca_data == pki.ca.cert_pem
    assert cfg.client_cert_data == pki.client.cert_pem
    assert cfg.tls_server_name == "kubernetes.default"
    assert cfg.server_hostname() == "kubernetes.default"
    assert cfg.bearer_token() is None
    ctx = cfg.ssl_context()
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.cert_store_stats()["x509_ca"] == 1
    assert list(scratch.iterdir()) == []  # the temporary key material is gone


def test_ca_and_client_cert_files(tmp_path: Path, pki: PKI) -> None:
    (tmp_path / "ca.crt").write_bytes(pki.ca.cert_pem)
    (tmp_path / "client.crt").write_bytes(pki.client.cert_pem)
    (tmp_path / "client.key").write_bytes(pki.client.key_pem)
    p = write_kubeconfig(
        tmp_path / "config",
        cluster={"server": "https://h:1", "certificate-authority": "ca.crt"},
        user={"client-certificate": "client.crt", "client-key": str(tmp_path / "client.key")},
    )
    cfg = load_kubeconfig(str(p))
    assert cfg.ca_file == str(tmp_path / "ca.crt")
    assert cfg.client_cert_file == str(tmp_path / "client.crt")
    assert cfg.ssl_context() is not None


def test_mismatched_key_is_a_config_error(pki: PKI) -> None:
    cfg = ClusterConfig(
        server="https://h:1",
        source="kc",
        client_cert_data=pki.client.cert_pem,
        client_key_data=pki.other_key_pem,
    )
    with pytest.raises(ConfigError, match="client-certificate-data / client-key-data"):
        cfg.ssl_context()
    with pytest.raises(ConfigError, match="client-key is not"):
        ClusterConfig(server="https://h:1", client_cert_data=pki.client.cert_pem).ssl_context()
    with pytest.raises(ConfigError, match="certificate-authority-data"):
        ClusterConfig(server="https://h:1", ca_data=b"garbage").ssl_context()


def test_insecure_skip_verify(tmp_path: Path) -> None:
    p = write_kubeconfig(
        tmp_path / "config", cluster={"server": "https://h:1", "insecure-skip-tls-verify": True}
    )
    ctx = load_kubeconfig(str(p)).ssl_context()
    assert ctx is not None
    assert ctx.verify_mode == ssl.CERT_NONE
    assert not ctx.check_hostname


def test_in_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pki: PKI) -> None:
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_bytes(pki.ca.cert_pem)
    (tmp_path / "namespace").write_text("kube-system")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    cfg = in_cluster_config(directory=tmp_path)
    assert cfg.server == "https://10.0.0.1:443"
    assert cfg.namespace == "kube-system"
    assert cfg.bearer_token() == "sa-token"
    assert cfg.ssl_context() is not None

    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    assert in_cluster_config(directory=tmp_path).server == "https://[fd00::1]:443"

    (tmp_path / "token").unlink()
    with pytest.raises(ConfigError, match="token"):
        in_cluster_config(directory=tmp_path)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster_config(directory=tmp_path)


def test_load_config_prefers_explicit_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = write_kubeconfig(tmp_path / "config")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBECONFIG", str(p))
    assert config_mod.load_config().source == str(p)
