"""ConfigMaps, Secrets and ServiceAccounts, as upstream prints them."""

from __future__ import annotations

from tests.api.tables.helpers import MINUTE, ago, by_name


def meta(name: str) -> dict[str, str]:
    return {"name": name, "creationTimestamp": ago(5 * MINUTE)}


def test_config_map_counts_text_and_binary_keys() -> None:
    cm = {"metadata": meta("cfg"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert by_name("ConfigMap", cm) == {"Name": "cfg", "Data": 3, "Age": "5m"}
    assert by_name("ConfigMap", {"metadata": meta("empty")})["Data"] == 0


def test_secret_shows_its_type_and_key_count() -> None:
    secret = {"metadata": meta("tls"), "type": "kubernetes.io/tls", "data": {"a": "", "b": ""}}
    assert by_name("Secret", secret) == {
        "Name": "tls",
        "Type": "kubernetes.io/tls",
        "Data": 2,
        "Age": "5m",
    }


def test_service_account_counts_its_secrets() -> None:
    sa = {"metadata": meta("default")}
    assert by_name("ServiceAccount", sa) == {"Name": "default", "Secrets": 0, "Age": "5m"}
    sa["secrets"] = [{"name": "token"}]
    assert by_name("ServiceAccount", sa)["Secrets"] == 1
