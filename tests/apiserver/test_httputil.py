"""The HTTP pieces handlers share: here, the patch type a PATCH's Content-Type names."""

from __future__ import annotations

import pytest

from inplace.apiserver.errors import StatusError
from inplace.apiserver.httputil import patch_type_of


@pytest.mark.parametrize(
    ("content_type", "patch_type"),
    [
        ("application/json-patch+json", "json"),
        ("application/merge-patch+json", "merge"),
        ("application/strategic-merge-patch+json", "strategic"),
        ("application/apply-patch+yaml", "apply"),
        ("Application/Merge-Patch+JSON; charset=utf-8", "merge"),
    ],
)
def test_each_patch_media_type_names_its_patch(content_type: str, patch_type: str) -> None:
    assert patch_type_of(content_type) == patch_type


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", ""])
def test_any_other_media_type_is_unsupported(content_type: str) -> None:
    with pytest.raises(StatusError) as info:
        patch_type_of(content_type)
    assert info.value.code == 415
    assert info.value.message == (
        f"the body of the request was in an unknown format: {content_type.lower()}"
    )
