"""``inplace node``'s flags for its endpoint, named as kubelet's."""

from __future__ import annotations

from pathlib import Path

import pytest

from inplace.node.main import build_parser, config_from_args, main

BASE = ["--kubeconfig", "kc.yaml", "--data-dir", "data", "--cpu", "1", "--memory", "1Gi"]


def test_without_tls_flags_the_endpoint_is_plain_http_on_loopback() -> None:
    config = config_from_args(build_parser().parse_args(BASE))
    assert (config.http_host, config.http_port) == ("127.0.0.1", 0)
    assert (config.tls_cert_file, config.tls_private_key_file, config.client_ca_file) == (
        None,
        None,
        None,
    )


def test_kubelets_flags(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        [
            *BASE,
            "--address",
            "10.0.0.7",
            "--port",
            "10250",
            "--tls-cert-file",
            str(tmp_path / "node.crt"),
            "--tls-private-key-file",
            str(tmp_path / "node.key"),
            "--client-ca-file",
            str(tmp_path / "ca.crt"),
        ]
    )
    config = config_from_args(args)
    assert (config.http_host, config.http_port) == ("10.0.0.7", 10250)
    assert config.tls_cert_file == tmp_path / "node.crt"
    assert config.tls_private_key_file == tmp_path / "node.key"
    assert config.client_ca_file == tmp_path / "ca.crt"


def test_https_wants_all_three_files(tmp_path: Path) -> None:
    args = build_parser().parse_args([*BASE, "--tls-cert-file", str(tmp_path / "node.crt")])
    with pytest.raises(SystemExit, match="missing --tls-private-key-file, --client-ca-file"):
        config_from_args(args)


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "node-1"])
def test_the_address_is_one_ip(address: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([*BASE, "--address", address])
    assert "--address" in capsys.readouterr().err


def test_unreadable_tls_files_are_one_line_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [tmp_path / name for name in ("node.crt", "node.key", "ca.crt")]
    code = main(
        [
            "--kubeconfig",
            str(tmp_path / "kc.yaml"),
            "--data-dir",
            str(tmp_path / "data"),
            "--tls-cert-file",
            str(files[0]),
            "--tls-private-key-file",
            str(files[1]),
            "--client-ca-file",
            str(files[2]),
        ]
    )
    assert code == 1
    assert capsys.readouterr().err.startswith("inplace node: cannot serve HTTPS: ")
    assert not (tmp_path / "data").exists()
