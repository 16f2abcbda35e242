"""Firmware read again after the driver stack is in: DOCA-OFED brings mstflint (mstconfig), so a VPI port left in
InfiniBand mode is named by stage ofed's checks even where discovery could not read the firmware (a bare host has
neither mlxconfig nor mstconfig). Source of the simulated query: mstflint mlxconfig (LINK_TYPE_Pn IB(1)/ETH(2))."""

from __future__ import annotations

import json
from pathlib import Path

from tests.engine.test_headless_demo import EXAMPLE, cli


def ofed_checks(state: Path, host: str) -> dict[str, dict]:
    doc = json.loads((state / "hosts" / f"{host}.json").read_text())
    return {c["id"]: c for c in doc["stages"]["ofed"]["checks"]}


def test_stage_ofed_names_a_vpi_port_in_infiniband_mode_once_the_firmware_tool_exists(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = cli("--demo", "--answers", str(EXAMPLE), "--only", "discovery,ofed", "--yes",
                 "--fault", "server2:vpi_ib_mode=ens1f1np1", "--state-dir", str(state))  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    good, bad = ofed_checks(state, "server1"), ofed_checks(state, "server2")
    assert good["nic_firmware"]["status"] == "pass"
    assert bad["nic_firmware"]["status"] == "fail"
    assert "ens1f1np1" in bad["nic_firmware"]["evidence"] and "LINK_TYPE_P2=ETH" in bad["nic_firmware"]["fix"]
