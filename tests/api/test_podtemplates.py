"""Pod templates compared with their resizable fields set aside."""

from __future__ import annotations

from typing import Any

from inplace.api.podtemplates import (
    effective_template,
    only_resizable_changed,
    recorded_resources,
    without_resizable,
)


def template(cpu: str = "100m", image: str = "busybox", policy: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": image,
        "resources": {"requests": {"cpu": cpu}},
    }
    if policy:
        container["resizePolicy"] = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
    return {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [container]}}


def test_only_resizable_changed() -> None:
    assert only_resizable_changed(template("100m"), template("200m"))
    assert only_resizable_changed(template(), template(policy=True))
    assert not only_resizable_changed(template(), template())
    assert not only_resizable_changed(template(), template("200m", image="other"))


def test_without_resizable_copies_and_tolerates_junk() -> None:
    original = template()
    stripped = without_resizable(original)
    assert "resources" not in stripped["spec"]["containers"][0]
    assert "resources" in original["spec"]["containers"][0]
    assert without_resizable({"spec": "junk"}) == {"spec": "junk"}
    assert without_resizable(None) is None


def test_a_jobs_recorded_resources_are_its_effective_template() -> None:
    job = {
        "metadata": {
            "annotations": {
                "inplace.dev/template-resources": '{"main": {"limits": {"memory": "2Gi"}}}'
            }
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "main", "resources": {"limits": {"memory": "1Gi"}}},
                        {"name": "side", "resources": {"limits": {"memory": "64Mi"}}},
                    ]
                }
            }
        },
    }
    assert recorded_resources(job) == {"main": {"limits": {"memory": "2Gi"}}}
    containers = effective_template(job)["spec"]["containers"]
    assert [c["resources"]["limits"]["memory"] for c in containers] == ["2Gi", "64Mi"]
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "memory": "1Gi"
    }  # the owner is not changed
    bad = {"metadata": {"annotations": {"inplace.dev/template-resources": "not json"}}}
    assert recorded_resources(bad) == {} and effective_template(bad) == {}
