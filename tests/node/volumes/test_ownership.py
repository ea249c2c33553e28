"""fsGroup ownership as upstream's SetVolumeOwnership, and OnRootMismatch."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from inplace.node.volumes.ownership import requires_permission_change, set_volume_ownership

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")


def test_group_owns_and_new_files_inherit(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir(mode=0o700)
    (tmp_path / "d" / "f").write_text("x")
    os.chmod(tmp_path / "d" / "f", 0o600)
    set_volume_ownership(str(tmp_path), 2000)
    for path, mode in ((tmp_path / "d", 0o2770), (tmp_path / "d" / "f", 0o660)):
        st = path.stat()
        assert st.st_gid == 2000
        assert stat.S_IMODE(st.st_mode) & mode == mode
    set_volume_ownership(str(tmp_path / "d"), 3000, readonly=True)
    assert stat.S_IMODE((tmp_path / "d" / "f").stat().st_mode) & 0o440 == 0o440


def test_on_root_mismatch_skips_a_matching_root(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    set_volume_ownership(str(tmp_path), 2000)
    assert not requires_permission_change(str(tmp_path), 2000, readonly=False)
    os.chown(tmp_path / "f", -1, 0)
    set_volume_ownership(str(tmp_path), 2000, policy="OnRootMismatch")
    assert (tmp_path / "f").stat().st_gid == 0  # the walk was skipped
    set_volume_ownership(str(tmp_path), 2000, policy="Always")
    assert (tmp_path / "f").stat().st_gid == 2000
