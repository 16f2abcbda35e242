"""Simulated switches behave like their NOS: names and LLDP identity, defaults, and loading a file as that NOS does.

Sources are cited in wizard/lab/switch_os/{cumulus,sonic,eos}.py; the lossless state of a port comes only from
what was loaded (plus faults), never from the lab's own wishes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wizard.lab import Lab
from wizard.lab.switch_load import configure_fabric, default_qos
from wizard.lab.switch_store import apply_file

HOSTS = [f"gpu-00{i}" for i in range(1, 5)]
ROCE_DSCP = 26


def lab_of(nos: str) -> Lab:
    return Lab.rails16(HOSTS, switch_os=nos)


def port(lab: Lab, host: str = "gpu-001", rail: int = 0):  # type: ignore[no-untyped-def]
    sp = lab.fabric.switches.port_of((host, rail))  # type: ignore[union-attr]
    assert sp is not None
    return sp


@pytest.mark.parametrize(
    ("nos", "name", "lldp"),
    [("cumulus", "swp3", ("ifname", "swp3")), ("sonic", "Ethernet16", ("local", "etp3")),
     ("eos", "Ethernet3/1", ("ifname", "Ethernet3/1"))],
)  # fmt: skip
def test_each_nos_names_its_ports_and_sends_its_lldp_port_id(nos: str, name: str, lldp: tuple[str, str]) -> None:
    sp = port(lab_of(nos), "gpu-003")
    assert sp.port == name and (sp.lldp_id_type, sp.lldp_id) == lldp


@pytest.mark.parametrize("nos", ["cumulus", "sonic", "eos"])
def test_out_of_the_box_no_nos_carries_roce_lossless_and_a_loaded_config_does(nos: str) -> None:
    lab = lab_of(nos)
    assert not port(lab).lossless(ROCE_DSCP)
    configure_fabric(lab)
    sp = port(lab)
    assert sp.lossless(ROCE_DSCP) and sp.marks(ROCE_DSCP) and sp.pfc_watchdog
    assert sp.priority(48) in sp.strict_prios  # CNPs strict priority
    spine = lab.fabric.switches.switches["spine-0"]  # type: ignore[union-attr]
    assert all(spine.ports[p].lossless(ROCE_DSCP) for p in spine.uplinks)


def test_sonic_defaults_make_3_and_4_lossless_but_put_dscp_26_in_lossy_tc_1() -> None:
    sp = port(lab_of("sonic"))  # files/build_templates/qos_config.j2, AZURE maps on every port
    assert sp.pfc_priorities == {3, 4} and sp.headroom == {3, 4}
    assert sp.priority(ROCE_DSCP) == 1 and not sp.lossless(ROCE_DSCP)


def test_sonic_config_load_merges_entries_for_ports_that_do_not_exist_and_they_change_nothing() -> None:
    lab = lab_of("sonic")
    doc = {"PORT_QOS_MAP": {"etp1": {"dscp_to_tc_map": "ROCE", "pfc_enable": "3"}},
           "DSCP_TO_TC_MAP": {"ROCE": {"26": "3"}}}  # fmt: skip
    result = apply_file(lab, "leaf-r0", json.dumps(doc))
    assert result.exit_code == 0 and result.applied
    assert not port(lab).lossless(ROCE_DSCP)


def test_sonic_null_buffer_profile_is_lossless_only_in_the_dynamic_model() -> None:
    lab = lab_of("sonic")
    doc = {
        "DSCP_TO_TC_MAP": {"R": {"42": "5"}},
        "TC_TO_PRIORITY_GROUP_MAP": {"R": {"5": "5"}},
        "PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "R", "tc_to_pg_map": "R", "pfc_enable": "5"}},
        "BUFFER_PG": {"Ethernet0|5": {"profile": "NULL"}},
    }
    assert apply_file(lab, "leaf-r0", json.dumps(doc)).exit_code == 0
    assert port(lab).lossless(42)
    traditional = {"DEVICE_METADATA": {"localhost": {"buffer_model": "traditional"}}}
    assert apply_file(lab, "leaf-r0", json.dumps(traditional)).exit_code == 0
    assert not port(lab).lossless(42)


def test_nvue_rejects_an_unknown_command_and_with_set_e_nothing_of_the_script_is_applied() -> None:
    lab = lab_of("cumulus")
    bad = "#!/bin/bash\nset -euo pipefail\nnv set qos roce mode lossless\nnv set qos roce-typo on\nnv config apply\n"
    result = apply_file(lab, "leaf-r0", bad)
    assert result.exit_code == 1 and not result.applied and "Invalid Command: nv set qos roce-typo on" in result.output
    assert not port(lab).lossless(ROCE_DSCP)
    without_e = bad.replace("set -euo pipefail\n", "")
    result = apply_file(lab, "leaf-r0", without_e)
    assert result.applied and port(lab).lossless(ROCE_DSCP)  # bash went on and `nv config apply` ran


def test_nvue_refuses_an_interface_the_switch_does_not_have() -> None:
    result = apply_file(lab_of("cumulus"), "leaf-r0", "set -e\nnv set interface swp99 link mtu 9216\nnv config apply\n")
    assert result.exit_code == 1 and "swp99 does not exist on leaf-r0" in result.output and not result.applied


def test_eos_paste_reports_each_invalid_line_and_commits_the_rest() -> None:
    lab = lab_of("eos")
    text = ("qos map dscp 26 to traffic-class 3\nqos frobnicate\ninterface Ethernet99/1\n   mtu 9214\n"
            "interface Ethernet1/1\n   qos trust dscp\n   priority-flow-control on\n"
            "   priority-flow-control priority 3 no-drop\n")  # fmt: skip
    result = apply_file(lab, "leaf-r0", text)
    assert result.exit_code == 1 and result.applied
    assert [line.split(": ", 1)[1].rstrip(")") for line in result.output.splitlines()] == [
        "qos frobnicate", "interface Ethernet99/1", "mtu 9214"]  # fmt: skip
    assert port(lab).lossless(ROCE_DSCP) and not port(lab, "gpu-002").lossless(ROCE_DSCP)


def test_without_the_uplinks_and_the_spine_traffic_between_rails_is_lossy_at_the_spine() -> None:
    lab = lab_of("sonic")
    configure_fabric(lab, uplinks=False)
    fab = lab.fabric.switches
    assert fab is not None
    same_rail = fab.path(("gpu-001", 0), ("gpu-002", 0))
    cross = fab.path(("gpu-001", 0), ("gpu-002", 1))
    assert len(same_rail) == 2 and all(p.lossless(ROCE_DSCP) for p in same_rail)
    assert [p.switch for p in cross] == ["leaf-r0", "leaf-r0", "spine-0", "leaf-r1", "spine-0", "leaf-r1"]
    assert not all(p.lossless(ROCE_DSCP) for p in cross)
    configure_fabric(lab)
    assert all(p.lossless(ROCE_DSCP) for p in fab.path(("gpu-001", 0), ("gpu-002", 1)))


def test_a_disabled_watchdog_in_the_answers_leaves_every_port_without_one() -> None:
    import dataclasses

    from wizard.answers.switches import PfcWatchdog

    lab = lab_of("eos")
    configure_fabric(lab, dataclasses.replace(default_qos(), watchdog=PfcWatchdog(enabled=False)))
    assert port(lab).lossless(ROCE_DSCP) and not port(lab).pfc_watchdog


def test_loaded_configs_are_kept_in_the_state_dir_and_a_new_nos_starts_from_its_defaults(tmp_path: Path) -> None:
    lab = lab_of("eos")
    lab.use_disks(tmp_path)
    configure_fabric(lab)
    saved = json.loads((tmp_path / "switches.json").read_text())
    assert saved["os"] == "eos" and len(saved["loaded"]) == 9
    again = Lab.rails16(HOSTS)  # no --switch-os: the saved switches come back
    again.use_disks(tmp_path)
    assert again.switch_os == "eos" and port(again).port == "Ethernet1/1" and port(again).lossless(ROCE_DSCP)
    other = Lab.rails16(HOSTS, switch_os="sonic")  # a reinstall: nothing loaded
    other.use_disks(tmp_path)
    assert not port(other).lossless(ROCE_DSCP)
    assert json.loads((tmp_path / "switches.json").read_text()) == {"os": "sonic", "os_of": {}, "loaded": {}}


def test_a_mixed_fabric_runs_each_switch_on_the_nos_the_answers_give_it(tmp_path: Path) -> None:
    """switches.os_of: a SONiC spine over Cumulus leaves. Each switch names its ports and loads files as its own NOS;
    changing a switch's NOS later is a reinstall of that switch only."""
    lab = Lab.rails16(HOSTS, switch_os="cumulus", switch_os_of={"spine-0": "sonic"})
    lab.use_disks(tmp_path)
    fab = lab.fabric.switches
    assert fab is not None
    assert (fab.switches["leaf-r0"].os, fab.switches["spine-0"].os) == ("cumulus", "sonic")
    assert fab.switches["spine-0"].uplinks[0].startswith("Ethernet") and fab.switches["leaf-r0"].uplinks[0].startswith(
        "swp"
    )
    configure_fabric(lab)  # each file rendered for its switch's NOS, loaded as that NOS loads it
    assert all(p.lossless(ROCE_DSCP) for p in fab.path(("gpu-001", 0), ("gpu-002", 1)))
    saved = json.loads((tmp_path / "switches.json").read_text())
    assert saved["os_of"] == {"spine-0": "sonic"} and len(saved["loaded"]) == 9
    again = Lab.rails16(HOSTS, switch_os_of={"spine-0": "eos"})
    again.use_disks(tmp_path)  # the spine was reinstalled as EOS: nothing loaded there, the leaves keep theirs
    sw = again.fabric.switches
    assert sw is not None and sw.switches["spine-0"].os == "eos" and not sw.switches["spine-0"].loaded
    assert sw.switches["leaf-r0"].loaded and port(again).lossless(ROCE_DSCP)
