"""switch-config: per-leaf lossless configuration for exactly the LLDP-found ports, from the hosts' RoCE answers.

Vendor sources the checks follow: NVIDIA Cumulus Linux 5.15 user guide "RDMA over Converged Ethernet - RoCE" and
5.19 "Quality of Service" (NVUE command forms); sonic-buildimage sonic-yang-models (table, key and leaf names,
patterns and ranges below); Arista AVD eos_cli_config_gen templates (EOS line forms)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.steps.facts_builder import answers as make_answers
from tests.steps.facts_builder import reference_host
from wizard.answers.model import Answers
from wizard.engine.step import ClusterView
from wizard.parsers.lldp import LldpNeighbor
from wizard.switchcfg import VENDORS, SwitchQos, plan_jobs, port_map, render, unconfigured, write
from wizard.switchcfg import sonic as sonic_mod

HOSTS = ("gpu-001", "gpu-002", "gpu-003", "gpu-004")
NO_NEIGHBOUR = ("gpu-002", "ens2f1np1")  # lldpd runs, but sees nothing on this port
NO_LLDPD = "gpu-004"  # lldpd is not running on this host: none of its ports has a neighbour


def fabric_facts() -> dict[str, dict[str, Any]]:
    """Rail-optimized cabling: port i of host n -> leaf-r<i> swp<n>, Cumulus-style names
    (docs/dev/briefs/issue14-brief.md)."""
    facts: dict[str, dict[str, Any]] = {}
    for n, host in enumerate(HOSTS, start=1):
        disc = reference_host(host, lldp_status="not running" if host == NO_LLDPD else "ok")
        for i, port in enumerate(disc.ports):
            if host != NO_LLDPD and (host, port.netdev) != NO_NEIGHBOUR:
                port.lldp = LldpNeighbor(
                    local_port=port.netdev or "",
                    chassis_name=f"leaf-r{i}",
                    chassis_id=f"0c:42:a1:00:0{i}:00",
                    chassis_id_type="mac",
                    port_id=f"swp{n}",
                    port_id_type="ifname",
                    port_descr=f"swp{n}",
                )
        facts[host] = {"discovery": disc.model_dump(mode="json")}
    return facts


def fabric_answers(body: str = "") -> Answers:
    return make_answers(body, hosts=HOSTS)


def fabric(body: str = "") -> tuple[ClusterView, SwitchQos]:
    ans = fabric_answers(body)
    return ClusterView(ans, fabric_facts()), SwitchQos.from_answers(ans)


def sonic_name(swp: str) -> str:
    """The SONiC port behind Cumulus-style swpN in these facts (what the port map resolves, Ethernet0 = port 1)."""
    return f"Ethernet{(int(swp[3:]) - 1) * 8}"


def all_files(body: str = "") -> dict[str, dict[str, str]]:
    view, qos = fabric(body)
    ports = port_map(view)
    files = {v: {s: render(v, s, uses, qos) for s, uses in ports.items()} for v in VENDORS if v != "sonic"}
    files["sonic"] = {
        s: render("sonic", s, [dataclasses.replace(u, port=sonic_name(u.port)) for u in uses], qos)
        for s, uses in ports.items()
    }
    return files


# -- the port map ------------------------------------------------------------------------------------------------
def test_port_map_holds_exactly_the_ports_lldp_found() -> None:
    view, _ = fabric()
    ports = port_map(view)
    assert sorted(ports) == ["leaf-r0", "leaf-r1", "leaf-r2", "leaf-r3"]
    assert [u.port for u in ports["leaf-r0"]] == ["swp1", "swp2", "swp3"]  # gpu-004 runs no lldpd
    assert [u.port for u in ports["leaf-r3"]] == ["swp1", "swp3"]  # gpu-002's port 3 has no neighbour
    use = next(u for u in ports["leaf-r2"] if u.host == "gpu-003")
    assert use.serves() == "gpu-003 ens2f0np0 (rail 2)"


def test_a_host_port_without_neighbour_is_listed_as_not_configured_with_the_reason() -> None:
    view, _ = fabric()
    missing = {(m.host, m.netdev): m.reason for m in unconfigured(view)}
    assert set(missing) == {NO_NEIGHBOUR, (NO_LLDPD, "*")}
    assert missing[NO_NEIGHBOUR].startswith("no LLDP neighbour")
    assert missing[(NO_LLDPD, "*")].startswith("LLDP could not be read on the host (lldpctl: not running)")


def test_a_port_whose_lldp_port_id_is_a_mac_is_named_by_its_description() -> None:
    view, _ = fabric()
    lldp = view.facts["gpu-001"]["discovery"]["ports"][0]["lldp"]
    lldp.update(port_id="0c:42:a1:00:00:01", port_id_type="mac", port_descr="Ethernet0")
    assert [u.port for u in port_map(view)["leaf-r0"]] == ["Ethernet0", "swp2", "swp3"]


def test_rail_numbers_follow_the_answers_rails_like_the_network_stage() -> None:
    body = "network:\n  rails:\n    - subnet: 192.168.10.0/24\n      netdev: ens2f0np0\n    - subnet: 192.168.11.0/24\n"
    view, _ = fabric(body)
    uses = {(u.host, u.netdev): u for us in port_map(view).values() for u in us}
    assert uses[("gpu-001", "ens2f0np0")].rail == 0  # explicit netdev
    assert uses[("gpu-001", "ens1f0np0")].rail == 1  # first port left in PCI order
    assert uses[("gpu-001", "ens1f1np1")].serves() == "gpu-001 ens1f1np1 (in no rail of the answers)"


def test_an_infiniband_port_and_a_failed_host_are_reported_not_configured() -> None:
    view, _ = fabric()
    view.facts["gpu-001"]["discovery"]["ports"][0]["link_layer"] = "InfiniBand"
    missing = {(m.host, m.netdev): m.reason for m in unconfigured(view, {"gpu-003": "ssh: connection refused"})}
    assert missing[("gpu-001", "ens1f0np0")].startswith("InfiniBand port")
    assert missing[("gpu-003", "*")] == "not probed: ssh: connection refused"
    assert all(u.host != "gpu-001" or u.netdev != "ens1f0np0" for us in port_map(view).values() for u in us)


# -- the same priority, DSCP and MTU everywhere -----------------------------------------------------------------
def test_every_vendor_carries_the_answers_dscp_priority_and_mtu() -> None:
    files = all_files()
    nv = files["nvue"]["leaf-r1"]
    assert "nv set qos roce mode lossless" in nv
    assert "nv set qos mapping default-global dscp 26 switch-priority 3" in nv
    assert nv.count("link mtu 9216") == 3
    db = json.loads(files["sonic"]["leaf-r1"])
    assert db["DSCP_TO_TC_MAP"]["ROCE"]["26"] == "3"
    assert {q["pfc_enable"] for q in db["PORT_QOS_MAP"].values()} == {"3"}
    assert {p["mtu"] for p in db["PORT"].values()} == {"9100"}
    ports = [sonic_name(f"swp{n}") for n in range(1, 4)]
    assert set(db["QUEUE"]) == {f"{p}|{q}" for p in ports for q in (3, 6)}  # ECN on 3, CNPs strict on 6
    eos = files["eos"]["leaf-r1"]
    assert "qos map dscp 26 to traffic-class 3" in eos
    assert eos.count("priority-flow-control priority 3 no-drop") == 3
    assert eos.count("   mtu 9214") == 3 and eos.count("   tx-queue 3") == 3


def test_changing_roce_tos_changes_every_vendors_output() -> None:
    before = all_files()
    after = all_files("roce:\n  tos: 138\n")  # DSCP 34 -> priority 4
    for vendor in VENDORS:
        for switch in before[vendor]:
            assert before[vendor][switch] != after[vendor][switch], (vendor, switch)
    assert "nv set qos pfc default-global switch-priority 4" in after["nvue"]["leaf-r0"]
    assert "dscp 34 switch-priority 4" in after["nvue"]["leaf-r0"]
    db = json.loads(after["sonic"]["leaf-r0"])
    assert db["DSCP_TO_TC_MAP"]["ROCE"]["34"] == "4" and db["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "4"
    assert "priority-flow-control priority 4 no-drop" in after["eos"]["leaf-r0"]
    assert "priority 3" not in after["eos"]["leaf-r0"]


def test_no_vendor_file_names_another_priority_or_dscp_than_the_answers() -> None:
    files = all_files("roce:\n  tos: 138\n")
    for text in files["eos"].values():
        assert set(re.findall(r"priority-flow-control priority (\d)", text)) == {"4"}
        assert set(re.findall(r"qos map dscp (\d+) to traffic-class 4", text)) == {"34"}
    for text in files["nvue"].values():
        assert set(re.findall(r"(?:default-global|roce-lossless) switch-priority (\d)$", text, re.M)) == {"4"}
    for text in files["sonic"].values():
        db = json.loads(text)
        assert {v["pfc_enable"] for v in db["PORT_QOS_MAP"].values()} == {"4"}
        assert [k for k, v in db["DSCP_TO_TC_MAP"]["ROCE"].items() if v == "4"] == [str(d) for d in range(32, 40)]


def test_ecn_off_in_the_answers_leaves_ecn_off_on_every_switch() -> None:
    files = all_files("roce:\n  ecn: false\n")
    assert "traffic-class 3 ecn disable" in files["nvue"]["leaf-r0"]
    assert "ecn enable" not in files["nvue"]["leaf-r0"]
    assert "WRED_PROFILE" not in json.loads(files["sonic"]["leaf-r0"])
    eos_config = [line for line in files["eos"]["leaf-r0"].splitlines() if not line.startswith("!")]
    assert not any("random-detect" in line or "tx-queue 3" == line.strip() for line in eos_config)
    assert "QUEUE" in json.loads(files["sonic"]["leaf-r0"])  # the CNP queue stays strict priority


def test_a_host_mtu_the_switch_cannot_carry_is_refused_naming_the_switch() -> None:
    view, qos = fabric("network:\n  mtu: 9500\n")
    uses = port_map(view)["leaf-r0"]
    for vendor in VENDORS:
        named = [dataclasses.replace(u, port=sonic_name(u.port)) for u in uses] if vendor == "sonic" else uses
        with pytest.raises(ValueError, match="leaf-r0: the hosts' MTU 9500"):
            render(vendor, "leaf-r0", named, qos)


# -- vendor syntax ------------------------------------------------------------------------------------------------
NVUE_FORMS = [
    r"nv set qos roce mode lossless",
    r"nv set qos mapping default-global trust both",
    r"nv set qos mapping default-global dscp \d+ switch-priority [0-7]",
    r"nv set qos pfc default-global switch-priority [0-7]",
    r"nv set qos traffic-pool roce-lossless switch-priority [0-7]",
    r"nv set qos pfc-watchdog (polling-interval|robustness) \d+",
    r"nv set interface swp\d+ qos pfc-watchdog state enable",
    r"nv set qos pfc default-global cable-length \d+",
    r"nv set qos egress-queue-mapping default-global switch-priority [0-7] traffic-class [0-7]",
    r"nv set qos congestion-control default-global traffic-class [0-7] (min|max)-threshold \d+",
    r"nv set qos congestion-control default-global traffic-class [0-7] ecn (enable|disable)",
    r"nv set interface swp\d+ link mtu \d+",
    r"nv config apply",
    r"set -euo pipefail",
]


@pytest.mark.parametrize("body", ["", "roce:\n  tos: 170\n", "roce:\n  ecn: false\n"])
def test_nvue_script_is_valid_bash_of_documented_nv_commands(body: str, tmp_path: Path) -> None:
    for switch, text in all_files(body)["nvue"].items():
        script = tmp_path / f"{switch}.sh"
        script.write_text(text)
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
        for line in text.splitlines():
            if line and not line.startswith("#"):
                assert any(re.fullmatch(form, line) for form in NVUE_FORMS), line
    assert text.splitlines()[0] == "#!/bin/bash"


REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "nvue-reference" / "commands.txt"


def reference_forms() -> list[list[str]]:
    """The NVUE Command Reference's command headings (tests/fixtures/nvue-reference), container headings left out:
    each `<...>` stands for one token, and a heading that does not end in one takes exactly one trailing value."""
    text = REFERENCE.read_text().split("# --- CONTAINER HEADINGS", 1)[0]
    return [line.split() for line in text.splitlines() if line.startswith("nv set ")]


def matches(words: list[str], form: list[str]) -> bool:
    if not form[-1].startswith("<"):
        form = [*form, "<value>"]
    return len(words) == len(form) and all(f.startswith("<") or f == w for w, f in zip(words, form, strict=True))


@pytest.mark.parametrize(
    "body", ["", "roce:\n  tos: 170\n  cable_length_m: 30\n", "roce:\n  ecn: false\n", "roce:\n  tos: 138\n"]
)
def test_every_nv_set_line_is_a_command_of_the_nvue_command_reference(body: str) -> None:
    forms = reference_forms()
    assert len(forms) > 20
    seen = 0
    for text in all_files(body)["nvue"].values():
        for line in text.splitlines():
            if line.startswith("nv set "):
                seen += 1
                assert any(matches(line.split(), f) for f in forms), f"not in the NVUE Command Reference: {line}"
    assert seen
    assert not matches(
        "nv set interface swp1 qos pfc-watchdog".split(),
        "nv set interface <interface-id> qos pfc-watchdog state".split(),
    )


def test_nvue_moves_pfc_and_the_roce_class_when_the_priority_is_not_3() -> None:
    nv = all_files("roce:\n  tos: 170\n")["nvue"]["leaf-r0"]  # DSCP 42 -> priority 5
    assert "nv set qos pfc default-global switch-priority 5" in nv
    assert "egress-queue-mapping default-global switch-priority 5 traffic-class 3" in nv
    assert "egress-queue-mapping default-global switch-priority 3 traffic-class 0" in nv
    assert "pfc default-global switch-priority 3" not in all_files()["nvue"]["leaf-r0"]


# Leaves of the sonic-yang-models lists used (sonic-*.yang in sonic-buildimage src/sonic-yang-models/yang-models).
YANG_LEAVES = {
    "PORT": {"mtu", "description"},
    "PFC_WD": {"action", "detection_time", "restoration_time", "POLL_INTERVAL"},
    "SCHEDULER": {"type", "weight", "priority"},
    "BUFFER_QUEUE": {"profile"},
    "PORT_QOS_MAP": {
        "tc_to_pg_map",
        "tc_to_queue_map",
        "pfc_enable",
        "pfcwd_sw_enable",
        "pfc_to_queue_map",
        "pfc_to_pg_map",
        "dscp_to_tc_map",
        "tc_to_dscp_map",
        "dot1p_to_tc_map",
        "tc_to_dot1p_map",
        "scheduler",
    },
    "WRED_PROFILE": {
        f"{c}_{f}" for c in ("green", "yellow", "red") for f in ("min_threshold", "max_threshold", "drop_probability")
    }
    | {"ecn", "wred_green_enable", "wred_yellow_enable", "wred_red_enable"},
    "QUEUE": {"scheduler", "wred_profile"},
    "BUFFER_PG": {"profile"},
}
MAP_TABLES = {  # table -> (key pattern, value pattern) of its map-list leaves
    "DSCP_TO_TC_MAP": (r"6[0-3]|[1-5][0-9]?|[0-9]?", r"[0-9]|1[0-5]"),
    "TC_TO_QUEUE_MAP": (r"[0-9]|1[0-5]", r"[0-9]?"),
    "TC_TO_PRIORITY_GROUP_MAP": (r"[0-9]|1[0-5]", r"[0-7]?"),
    "MAP_PFC_PRIORITY_TO_QUEUE": (r"[0-7]?", r"[0-7]?"),
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": (r"[0-7]?", r"[0-7]?"),
}
MAP_OF_LEAF = {  # PORT_QOS_MAP leafrefs (sonic-port-qos-map.yang) -> the table they point into
    "dscp_to_tc_map": "DSCP_TO_TC_MAP",
    "tc_to_queue_map": "TC_TO_QUEUE_MAP",
    "tc_to_pg_map": "TC_TO_PRIORITY_GROUP_MAP",
    "pfc_to_queue_map": "MAP_PFC_PRIORITY_TO_QUEUE",
    "pfc_to_pg_map": "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
}
NAME = r"[a-zA-Z0-9]{1}([-a-zA-Z0-9_]{0,31})"
WRED_ECN = {
    "ecn_none",
    "ecn_green",
    "ecn_yellow",
    "ecn_red",
    "ecn_green_yellow",
    "ecn_green_red",
    "ecn_yellow_red",
    "ecn_all",
}


@pytest.mark.parametrize("body", ["", "roce:\n  tos: 170\n"])
def test_sonic_json_matches_the_yang_models(body: str) -> None:
    for text in all_files(body)["sonic"].values():
        db = json.loads(text)
        assert set(db) <= set(YANG_LEAVES) | set(MAP_TABLES)
        ports = set(db["PORT"])
        for table, entries in db.items():
            for key, fields in entries.items():
                assert all(isinstance(v, str) for v in fields.values()), (table, key)  # CONFIG_DB stores strings
                if table in MAP_TABLES:
                    assert re.fullmatch(NAME, key)
                    kpat, vpat = MAP_TABLES[table]
                    assert all(re.fullmatch(kpat, k) and re.fullmatch(vpat, v) for k, v in fields.items()), table
                    continue
                assert set(fields) <= YANG_LEAVES[table], (table, set(fields) - YANG_LEAVES[table])
                if table in ("QUEUE", "BUFFER_PG", "BUFFER_QUEUE"):
                    port, index = key.split("|")
                    assert port in ports and re.fullmatch(r"[0-7]((-)[0-7])?", index)
                if table == "PFC_WD":  # sonic-pfcwd.yang: a port (leafref) or GLOBAL; times 100..5000 / 100..60000
                    assert key == "GLOBAL" or key in ports
                    if key != "GLOBAL":
                        assert fields["action"] in ("drop", "forward", "alert")
                        assert 100 <= int(fields["detection_time"]) <= 5000
                        assert 100 <= int(fields["restoration_time"]) <= 60000
        for key, qmap in db["PORT_QOS_MAP"].items():
            assert key in ports and re.fullmatch(r"([0-7](,[0-7])*)?", qmap["pfc_enable"])
            for leaf in MAP_OF_LEAF:
                assert qmap[leaf] in db[MAP_OF_LEAF[leaf]]  # the leafref resolves
        assert all(68 <= int(p["mtu"]) <= 9216 and len(p["description"]) <= 255 for p in db["PORT"].values())
        for profile in db.get("WRED_PROFILE", {}).values():
            assert profile["ecn"] in WRED_ECN
            assert int(profile["green_max_threshold"]) >= int(profile["green_min_threshold"])
            assert 0 <= int(profile["green_drop_probability"]) <= 100
        for queue in db.get("QUEUE", {}).values():
            assert queue.get("wred_profile", "ROCE_LOSSLESS") in db["WRED_PROFILE"]
            assert queue.get("scheduler", "ROCE_CNP_STRICT") in db["SCHEDULER"]
        assert all(re.fullmatch(r"Ethernet\d+", p) for p in ports), "CONFIG_DB is keyed by SONiC's port names"


def test_sonic_writes_lossless_buffers_for_the_answers_priority_in_the_switchs_buffer_model() -> None:
    ports = [sonic_name(f"swp{n}") for n in (1, 2, 3)]
    db3 = json.loads(all_files()["sonic"]["leaf-r0"])  # written, not assumed from the template's 3-4
    assert db3["BUFFER_PG"] == {f"{p}|3": {"profile": "NULL"} for p in ports}
    assert db3["BUFFER_QUEUE"] == {f"{p}|3": {"profile": "egress_lossless_profile"} for p in ports}
    db5 = json.loads(all_files("roce:\n  tos: 170\n")["sonic"]["leaf-r0"])
    assert db5["BUFFER_PG"] == {f"{p}|5": {"profile": "NULL"} for p in ports}
    assert db5["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"]["ROCE"] == {"5": "5"}
    trad = json.loads(all_files("switches:\n  sonic_buffer_model: traditional\n")["sonic"]["leaf-r0"])
    assert {v["profile"] for v in trad["BUFFER_PG"].values()} == {"pg_lossless_400000_5m_profile"}  # never NULL
    assert trad["CABLE_LENGTH"]["AZURE"] == dict.fromkeys(ports, sonic_mod.TRADITIONAL_CABLE)


EOS_TOP = [
    r"qos map dscp \d+ to traffic-class [0-7]",
    r"qos map traffic-class [0-7] to tx-queue [0-7]",
    r"priority-flow-control pause watchdog default (timeout|recovery-time|polling-interval) [\d.]+",
    r"priority-flow-control pause watchdog action drop",
    r"interface \S+",
    r"!( .*)?",
    r"end",
]
EOS_IF = [
    r"description .+",
    r"mtu \d+",
    r"qos trust dscp",
    r"priority-flow-control on",
    r"priority-flow-control priority [0-7] no-drop",
    r"priority-flow-control pause watchdog",
    r"dcbx mode ieee",
    r"tx-queue [0-7]",
]
EOS_TXQ = [
    r"random-detect ecn minimum-threshold \d+ kbytes maximum-threshold \d+ kbytes max-mark-probability \d+",
    r"priority strict",
]


def test_eos_config_lines_are_known_command_forms_at_their_indentation() -> None:
    for text in all_files()["eos"].values():
        mode = "top"
        for line in text.splitlines():
            if not line:
                continue
            depth = (len(line) - len(line.lstrip(" "))) // 3
            body = line.strip()
            forms = {0: EOS_TOP, 1: EOS_IF, 2: EOS_TXQ}[depth]
            assert any(re.fullmatch(f, body) for f in forms), line
            if depth == 2:
                assert mode == "tx-queue", line
            mode = {0: "top", 1: "tx-queue" if body.startswith("tx-queue") else "if", 2: mode}[depth]
        assert text.rstrip().endswith("end")


def test_each_switch_port_says_which_host_port_it_serves() -> None:
    files = all_files()
    assert "# swp3: gpu-003 ens1f1np1 (rail 1)" in files["nvue"]["leaf-r1"]
    assert json.loads(files["sonic"]["leaf-r1"])["PORT"]["Ethernet16"]["description"] == "gpu-003 ens1f1np1 (rail 1)"
    assert "interface swp3\n   description gpu-003 ens1f1np1 (rail 1)" in files["eos"]["leaf-r1"]


# -- the output folder and the command --------------------------------------------------------------------------
def test_write_puts_one_file_per_switch_and_a_readme_naming_what_was_left_out(tmp_path: Path) -> None:
    view, qos = fabric()
    jobs = plan_jobs(port_map(view))
    written = write(tmp_path, "eos", jobs, qos, unconfigured(view), origin="test facts")
    names = sorted(p.name for p in written)
    leaves = [f"leaf-r{i}" for i in range(4)]
    assert names == ["README.txt", *sorted(f"{leaf}.{ext}" for leaf in leaves for ext in ("eos", "avd.yml"))]
    readme = (tmp_path / "eos" / "README.txt").read_text()
    assert "gpu-002 ens2f1np1: no LLDP neighbour" in readme
    assert "gpu-004 *: LLDP could not be read on the host" in readme
    assert "swp2           gpu-002 ens1f0np0 (rail 0)" in readme
    assert "Leaf uplinks and spines are not in these files" in readme and "AVD" in readme


def _answers_file(tmp_path: Path) -> Path:
    text = "version: 1\ncluster:\n  name: sc-test\nhosts:\n" + "".join(
        f"  - name: {h}\n    address: 10.0.0.{11 + i}\n" for i, h in enumerate(HOSTS)
    )
    path = tmp_path / "answers.yaml"
    path.write_text(text)
    return path


def test_switch_config_command_from_saved_facts_writes_the_vendor_folder(tmp_path: Path) -> None:
    from wizard.cli.main import main
    from wizard.engine.state import StateStore

    state = tmp_path / "state"
    store = StateStore(state)
    for host, facts in fabric_facts().items():
        store.save_facts(host, facts)
    out = tmp_path / "out"
    argv = ["switch-config", "--answers", str(_answers_file(tmp_path)), "--vendor", "eos", "--out", str(out)]
    assert main([*argv, "--saved", "--state-dir", str(state)]) == 0
    assert sorted(p.name for p in (out / "eos").iterdir() if p.suffix != ".yml") == [
        "README.txt",
        "leaf-r0.eos",
        "leaf-r1.eos",
        "leaf-r2.eos",
        "leaf-r3.eos",
    ]
    assert f"discovery facts saved in {state}" in (out / "eos" / "README.txt").read_text()


def test_switch_config_without_answers_or_demo_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from wizard.cli.main import main

    assert main(["switch-config", "--vendor", "nvue"]) == 2
    assert "needs --answers FILE" in capsys.readouterr().err


@pytest.mark.slow
def test_rails16_demo_writes_nvue_for_eight_leaves(tmp_path: Path) -> None:
    """The 16-host simulated fabric end to end (about 16 s alone: discovery probes 16 hosts over SSH)."""
    from wizard.cli.main import main

    out = tmp_path / "sc"
    argv = ["switch-config", "--demo", "--profile", "rails-16", "--vendor", "nvue", "--out", str(out)]
    assert main([*argv, "--state-dir", str(tmp_path / "state")]) == 0
    files = sorted(p.name for p in (out / "nvue").iterdir())
    assert files == ["README.txt"] + [f"leaf-r{i}.nvue.sh" for i in range(8)] + ["spine-0.nvue.sh"]
    for rail in range(8):
        leaf = (out / "nvue" / f"leaf-r{rail}.nvue.sh").read_text()
        assert leaf.count("link mtu 9216") == 17  # 16 hosts and the uplink (read off the simulated fabric)
        assert leaf.count("qos pfc-watchdog state enable\n") == 17
        assert "# swp16: gpu-016 " in leaf and f"(rail {rail})" in leaf
        assert subprocess.run(["bash", "-n", "-c", leaf]).returncode == 0
    assert (
        "Not configured (no switch file covers these host ports):\n  none" in (out / "nvue" / "README.txt").read_text()
    )


def test_the_answers_cable_length_sizes_the_switches_headroom_as_it_does_the_hosts() -> None:
    """roce.cable_length_m reaches both ends of each cable: mlnx_qos --cable_len on the hosts, NVUE's PFC
    cable-length and SONiC's CABLE_LENGTH (both buffer models size the headroom from it) on the switches."""
    ports = [sonic_name(f"swp{n}") for n in (1, 2, 3)]
    files = all_files("roce:\n  cable_length_m: 30\n")
    assert "nv set qos pfc default-global cable-length 30" in files["nvue"]["leaf-r0"]
    assert json.loads(files["sonic"]["leaf-r0"])["CABLE_LENGTH"]["AZURE"] == dict.fromkeys(ports, "30m")
    trad = all_files("roce:\n  cable_length_m: 40\nswitches:\n  sonic_buffer_model: traditional\n")
    db = json.loads(trad["sonic"]["leaf-r0"])
    assert {v["profile"] for v in db["BUFFER_PG"].values()} == {"pg_lossless_400000_40m_profile"}
    unset = all_files()
    assert "cable-length" not in unset["nvue"]["leaf-r0"]
    assert "CABLE_LENGTH" not in json.loads(unset["sonic"]["leaf-r0"]), "the switch's own default stays"


def test_a_mixed_fabric_gets_each_switch_in_its_own_nos_format(tmp_path: Path) -> None:
    """switches.os_of names the switches that run another NOS than --vendor: their files go to that NOS's folder."""
    from wizard.cli.main import main
    from wizard.engine.state import StateStore

    state = tmp_path / "state"
    store = StateStore(state)
    for host, facts in fabric_facts().items():
        store.save_facts(host, facts)
    answers = _answers_file(tmp_path)
    answers.write_text(answers.read_text() + "switches:\n  os_of:\n    leaf-r1: eos\n")
    out = tmp_path / "out"
    argv = ["switch-config", "--answers", str(answers), "--vendor", "cumulus", "--out", str(out)]
    assert main([*argv, "--saved", "--state-dir", str(state)]) == 0
    assert sorted(p.name for p in (out / "cumulus").iterdir()) == [
        "README.txt", "leaf-r0.nvue.sh", "leaf-r2.nvue.sh", "leaf-r3.nvue.sh"
    ]  # fmt: skip
    assert sorted(p.name for p in (out / "eos").iterdir()) == ["README.txt", "leaf-r1.avd.yml", "leaf-r1.eos"]
    assert "interface swp3\n   description gpu-003 ens1f1np1 (rail 1)" in (out / "eos" / "leaf-r1.eos").read_text()
