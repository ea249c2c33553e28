"""``inplace operator``'s command line: the controllers ``--vpa`` and ``--rescue`` add."""

from __future__ import annotations

from inplace.controllers.manager import select_controllers
from inplace.operator.main import _controllers, build_parser

BASE = ["--webhook-service", "inplace-webhook"]


def test_vpa_and_rescue_add_their_controllers() -> None:
    table = [
        ([], "workload-resize,in-place-release"),
        (["--vpa"], "workload-resize,in-place-release,vertical-pod-autoscaler"),
        (["--rescue"], "workload-resize,in-place-release,rescue-controller"),
        (
            ["--controllers", "workload-resize", "--vpa", "--rescue"],
            "workload-resize,vertical-pod-autoscaler,rescue-controller",
        ),
    ]
    for flags, expected in table:
        chosen = _controllers(build_parser().parse_args([*BASE, *flags]))
        assert chosen == expected, flags
        select_controllers(chosen)  # every name is a known controller


def test_the_rescue_flags_are_the_controller_managers() -> None:
    args = build_parser().parse_args(
        [*BASE, "--rescue", "--rescue-timeout", "2m", "--rescue-margin", "0.5"]
    )
    assert args.rescue_timeout == 120.0 and args.rescue_margin == 0.5
    assert args.rescue_min_history == 10.0
