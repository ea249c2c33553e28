"""``--controllers`` selection and the duration flags, as kube-controller-manager reads them."""

from __future__ import annotations

import argparse

import pytest

from inplace.controllers.main import parse_duration
from inplace.controllers.manager import ControllerSelectionError, select_controllers


def names(text: str) -> list[str]:
    return [spec.name for spec in select_controllers(text)]


def test_star_selects_every_controller_and_minus_removes_one() -> None:
    every = names("*")
    assert "deployment-controller" in every and "workload-resize" in every
    without_gc = names("*,-garbagecollector")
    assert "garbage-collector-controller" not in without_gc
    assert len(without_gc) == len(every) - 1


def test_aliases_and_the_workload_resize_controller_alone() -> None:
    assert names("deployment,replicaset") == ["replicaset-controller", "deployment-controller"]
    assert names("workload-resize") == ["workload-resize"]
    assert names("") == []


def test_an_unknown_controller_is_refused_naming_it() -> None:
    with pytest.raises(ControllerSelectionError, match='unknown controller "nope"'):
        select_controllers("*,nope")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("40s", 40.0), ("1m30s", 90.0), ("500ms", 0.5), ("12", 12.0), ("2h", 7200.0)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "s", "10x", "1m30"])
def test_a_bad_duration_is_an_argument_error(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration(text)
