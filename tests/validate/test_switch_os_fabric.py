"""The operator's switch step on switches that behave like their NOS: switch-config's files, loaded the way each NOS
loads them (`roce-wizard lab switch-apply`), are what makes the rails lossless, and `bwtest --incast` measures it.

Five rails-16 hosts are brought up once on unconfigured Cumulus leaves (whose defaults trust PCP and run no PFC, so
the incast drops); each NOS then gets its own copy of that state: `--switch-os X` reinstalls the switches,
`switch-config --demo --vendor X` reads the LLDP view (and, for SONiC, each switch's `show interfaces alias`),
`lab switch-apply` loads the files, and `bwtest --incast` passes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.validate.rails5 import QUICK, brought_up, run, target
from wizard.cli.main import main
from wizard.validate import perftest


@pytest.fixture(autouse=True)
def fast_lab(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.1")
    monkeypatch.setattr(perftest, "START_DELAY_S", 0.1)


@pytest.fixture(scope="module")
def unconfigured() -> tuple[Path, Path, int, str]:
    """Hosts brought up by bwtest on leaves nobody configured; (answers, state, exit code, output)."""
    up = brought_up()
    return up.answers, up.state, up.code, up.out


def causes(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("  cause ")]


@pytest.mark.slow  # the five hosts' bring-up and one incast round (about 30 s)
def test_leaves_nobody_configured_drop_the_incast_and_the_cause_names_the_leaf_port(
    unconfigured: tuple[Path, Path, int, str],
) -> None:
    _, _, code, out = unconfigured
    assert code == 1, out[-3000:]
    found = causes(out)
    assert len(found) == 8 and all("retransmitted" in c and "PFC pause" in c for c in found), found
    assert "(leaf-r0 swp1)" in found[0] and "switch-config" in found[0]  # the receiver's leaf port, from LLDP


def switch_step(answers: Path, state: Path, nos: str, out_dir: Path) -> list[Path]:
    """switch-config for the NOS the simulated switches run, then its files, as the operator gets them."""
    code, out = run(
        "switch-config", *target(answers, state), "--switch-os", nos, "--vendor", nos, "--out", str(out_dir)
    )
    assert code == 0, out[-3000:]
    ext = {"cumulus": ".sh", "sonic": ".json", "eos": ".eos"}[nos]  # EOS also gets <switch>.avd.yml for AVD users
    return sorted(p for p in (out_dir / nos).iterdir() if p.suffix == ext)


@pytest.mark.slow  # per NOS: a discovery, the load, the cross-rail pairs and two incast rounds (about 40 s)
@pytest.mark.parametrize("nos", ["cumulus", "sonic", "eos"])
def test_switch_configs_loaded_the_way_each_nos_loads_them_make_the_incast_lossless_within_and_across_rails(
    unconfigured: tuple[Path, Path, int, str], tmp_path: Path, nos: str
) -> None:
    answers, prepared, _, _ = unconfigured
    state = tmp_path / "state"
    shutil.copytree(prepared, state)
    files = switch_step(answers, state, nos, tmp_path / "sc")
    assert [f.name.split(".")[0] for f in files] == [f"leaf-r{i}" for i in range(8)] + ["spine-0"]
    code, out = run("lab", "switch-apply", "--answers", str(answers), "--state-dir", str(state), *map(str, files))
    assert code == 0, out
    assert out.count(f"({nos}): ") == 9 and "nothing applied" not in out
    code, out = run("bwtest", *target(answers, state), "--cross-rail", *QUICK)  # every rail, then through the spine
    assert code == 0, "\n".join(causes(out)) or out[-3000:]
    assert "PASS  incast round 0: 2 -> gpu-001 on 8 rail(s)" in out and "drops 0" in out
    assert "PASS  incast round 1 (senders on the next rail, through the spine)" in out, out[-3000:]


@pytest.mark.slow  # a discovery, two loads and two incast rounds (about 45 s)
def test_sonic_config_keyed_by_the_lldp_alias_loads_without_error_but_the_rails_stay_lossy(
    unconfigured: tuple[Path, Path, int, str], tmp_path: Path
) -> None:
    """The old switch-config keyed CONFIG_DB by the LLDP port ID; on SONiC that is the alias (etp5), so `config
    load` merges entries for ports that do not exist and the real EthernetN ports keep the template's maps, which
    put DSCP 26 in lossy traffic class 1."""
    answers, prepared, _, _ = unconfigured
    state = tmp_path / "state"
    shutil.copytree(prepared, state)
    files = switch_step(answers, state, "sonic", tmp_path / "sc")
    by_alias = tmp_path / "by-alias"
    by_alias.mkdir()
    for path in files:
        text = path.read_text()
        for n in range(63, -1, -1):  # Ethernet(8*(n-1)) is etp<n> on the SN5600 (port_config.ini)
            text = text.replace(f'"Ethernet{8 * n}', f'"etp{n + 1}')
        (by_alias / path.name).write_text(text)
    code, out = run("lab", "switch-apply", "--answers", str(answers), "--state-dir", str(state),
                    *map(str, sorted(by_alias.iterdir())))  # fmt: skip
    assert code == 0, out  # `config load` takes it without a word
    code, out = run("bwtest", *target(answers, state), *QUICK)
    assert code == 1 and causes(out) and "(leaf-r0 etp" in out, out[-3000:]
    code, out = run("lab", "switch-apply", "--answers", str(answers), "--state-dir", str(state), *map(str, files))
    assert code == 0, out
    code, out = run("bwtest", *target(answers, state), *QUICK)
    assert code == 0, "\n".join(causes(out))


def test_a_sonic_port_map_without_an_alias_stops_naming_switch_and_alias_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.engine.test_switch_config import _answers_file, fabric_facts
    from wizard.engine.state import StateStore

    facts = fabric_facts()
    for doc in facts.values():  # SONiC's LLDP port IDs are aliases: etp<n>
        for port in doc["discovery"]["ports"]:
            if port.get("lldp"):
                port["lldp"]["port_id"] = "etp" + port["lldp"]["port_id"][3:]
                port["lldp"]["port_id_type"] = "local"
    store = StateStore(tmp_path / "state")
    for host, doc in facts.items():
        store.save_facts(host, doc)
    maps = tmp_path / "maps"
    maps.mkdir()
    table = "Name        Alias\n----------  -----\n" + "".join(f"Ethernet{8 * i:<4}  etp{i + 1}\n" for i in range(2))
    for leaf in ("leaf-r0", "leaf-r1", "leaf-r2", "leaf-r3"):
        (maps / f"{leaf}.txt").write_text(table)  # only etp1 and etp2: the third host's port is not in it
    out = tmp_path / "out"
    argv = ["switch-config", "--answers", str(_answers_file(tmp_path)), "--saved", "--state-dir",
            str(tmp_path / "state"), "--vendor", "sonic", "--port-map", str(maps), "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "leaf-r0: LLDP port ID 'etp3' (gpu-003 " in err[0] and str(maps / "leaf-r0.txt") in err[0]
    assert not out.exists()
    (maps / "leaf-r0.txt").write_text(table + "".join(f"Ethernet{8 * i:<4}  etp{i + 1}\n" for i in range(2, 4)))
    for leaf in ("leaf-r1", "leaf-r2", "leaf-r3"):
        (maps / f"{leaf}.txt").write_text((maps / "leaf-r0.txt").read_text())
    assert main(argv) == 0
    db = json.loads((out / "sonic" / "leaf-r0.json").read_text())
    assert sorted(db["PORT_QOS_MAP"]) == ["Ethernet0", "Ethernet16", "Ethernet8"]


@pytest.mark.slow  # one cross-rail run with one incast round (about 35 s); the fully configured path is
# tests/lab/test_switch_os.py's (the same files, the path model)
def test_cross_rail_incast_through_a_spine_nobody_configured_names_the_path_between_the_leaves(
    unconfigured: tuple[Path, Path, int, str], tmp_path: Path
) -> None:
    """EOS needs every port listed: leaves configured for their host ports only, uplinks and spine left alone, so
    same-rail traffic is lossless and traffic between rails drops at the spine."""
    from wizard.lab.switch_load import configure_demo_state

    answers, prepared, _, _ = unconfigured
    state = tmp_path / "state"
    shutil.copytree(prepared, state)
    configure_demo_state(state, answers, "eos", uplinks=False)
    cross = [*target(answers, state), "--cross-rail", *QUICK]
    code, out = run("bwtest", *cross)
    assert code == 1, out[-3000:]
    assert "PASS  incast round 0: 2 -> gpu-001 on 8 rail(s)" in out  # same rail: only leaf ports, configured
    found = causes(out)
    assert found and all("(their uplinks and the spine) does not run PFC on priority 3" in c for c in found), found
    assert "senders on rail 1 into gpu-001 enp24s0np0 (leaf-r0 Ethernet1/1) (rail 0)" in found[0]
    assert "the path between leaf-r1 and leaf-r0" in found[0]
    assert "FAIL  incast round 1 (senders on the next rail, through the spine) rail 0: 2 -> gpu-001" in out


@pytest.mark.slow  # one incast round (about 20 s)
def test_a_pause_storm_stalls_its_senders_where_the_leaf_has_no_pfc_watchdog_and_is_cut_off_where_it_has(
    unconfigured: tuple[Path, Path, int, str], tmp_path: Path
) -> None:
    """gpu-001's rail 0 and rail 1 ports both storm (a hung receive path sending XOFF without end). leaf-r0 got
    switch-config's file as written (PFC watchdog on every port); leaf-r1 the same file written with
    `switches.pfc_watchdog.enabled: false`. Same storm, two named verdicts."""
    from wizard.lab.switch_load import configure_demo_state

    answers, prepared, _, _ = unconfigured
    state = tmp_path / "state"
    shutil.copytree(prepared, state)
    configure_demo_state(state, answers, "cumulus", no_watchdog={"leaf-r1"})
    storms = ["--fault", "gpu-001:pfc_storm=enp24s0np0", "--fault", "gpu-001:pfc_storm=enp64s0np0"]
    code, out = run("bwtest", *target(answers, state), *storms, *QUICK)
    assert code == 1, out[-3000:]
    found = causes(out)
    assert len(found) == 2, found
    rail0, rail1 = found
    assert "gpu-001 enp24s0np0 (leaf-r0 swp1) is in a PFC pause storm" in rail0
    assert "the PFC watchdog on leaf-r0 swp1 stopped it" in rail0 and "rest of the rail keeps working" in rail0
    assert "gpu-001 enp64s0np0 (leaf-r1 swp1) is in a PFC pause storm" in rail1
    assert "its switch port leaf-r1 swp1 has no PFC watchdog" in rail1 and "for the whole round" in rail1
    assert "enable the PFC watchdog on leaf-r1 swp1" in out
