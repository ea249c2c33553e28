"""The rescuer's ``inplace controller-manager --rescue-*`` flags, kept here so the controller
manager's own command line only hands them over."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .model import DEFAULT_MARGIN
from .policy import DEFAULT_TIMEOUT
from .usage import DEFAULT_MIN_HISTORY, DEFAULT_WINDOW

__all__ = ["add_rescue_arguments", "rescue_options"]


def add_rescue_arguments(
    parser: argparse.ArgumentParser, duration: Callable[[str], float] = float
) -> None:
    """``duration`` parses a Go duration (``inplace.flags.duration``)."""
    group = parser.add_argument_group("rescue-controller")
    group.add_argument(
        "--rescue-margin",
        type=float,
        default=DEFAULT_MARGIN,
        help=f"room kept above a donor's recent peak usage, a fraction ({DEFAULT_MARGIN:g})",
    )
    group.add_argument(
        "--rescue-timeout",
        type=duration,
        default=DEFAULT_TIMEOUT,
        help=f"how long a rescue may wait for its pending pod to be bound ({DEFAULT_TIMEOUT:g}s)",
    )
    group.add_argument(
        "--rescue-usage-window",
        type=duration,
        default=DEFAULT_WINDOW,
        help=f"how far back a donor's peak usage is taken from ({DEFAULT_WINDOW:g}s)",
    )
    group.add_argument(
        "--rescue-min-history",
        type=duration,
        default=DEFAULT_MIN_HISTORY,
        help="how long a pod's usage must have been read before it can be a donor "
        f"({DEFAULT_MIN_HISTORY:g}s)",
    )


def rescue_options(args: argparse.Namespace) -> dict[str, float]:
    """The parsed flags as the controller's ``Context.options``."""
    return {
        "rescue_margin": args.rescue_margin,
        "rescue_timeout": args.rescue_timeout,
        "rescue_usage_window": args.rescue_usage_window,
        "rescue_min_history": args.rescue_min_history,
    }
