"""The EOS switch files checked by Arista's own tooling: AVD's eos_cli_config_gen schema accepts the structured
configuration switch-config writes, and AVD's templates render it to exactly the CLI lines of the .eos file (which
adds only the interface lines AVD has no key for)."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.engine.test_switch_config import fabric
from wizard.switchcfg import eos
from wizard.switchcfg.model import port_map

pyavd = pytest.importorskip("pyavd", reason="pyavd (Arista AVD) is not installed: pip install -e '.[test]'")


BODIES = ["", "roce:\n  tos: 170\n", "roce:\n  ecn: false\nswitches:\n  pfc_watchdog:\n    enabled: false\n"]


def files(body: str = "") -> list[tuple[dict, str]]:
    """(structured configuration, CLI) of every leaf, plus a spine with two fabric ports."""
    view, qos = fabric(body)
    out = []
    for switch, uses in port_map(view).items():
        out.append(
            (eos.structured(switch, uses, qos, ["Ethernet64/1"]), eos.render(switch, uses, qos, ["Ethernet64/1"]))
        )
    out.append((eos.structured("spine-0", [], qos, ["Ethernet1/1", "Ethernet2/1"], "spine"),
                eos.render("spine-0", [], qos, ["Ethernet1/1", "Ethernet2/1"], "spine")))  # fmt: skip
    return out


def blocks(cli: str) -> dict[str, list[str]]:
    """Config lines by section ('' for the global ones; 'interface X' for each interface), comments dropped."""
    out: dict[str, list[str]] = {"": []}
    section = ""
    for line in cli.splitlines():
        if not line.strip() or line.lstrip().startswith("!") or line in ("end",) or line.startswith("hostname"):
            continue
        if line.startswith("interface "):
            section = line
            out[section] = []
        elif not line.startswith(" "):
            section = ""
            out[""].append(line)
        else:
            out[section].append(line)
    return out


@pytest.mark.parametrize(
    "body", ["", "roce:\n  tos: 170\n", "roce:\n  ecn: false\nswitches:\n  pfc_watchdog:\n    enabled: false\n"]
)
def test_avds_schema_accepts_the_structured_configuration(body: str) -> None:
    for config, _ in files(body):
        result = pyavd.validate_structured_config({"hostname": "x", **config}).validation_result
        assert [(v.path, v.message) for v in result.violations] == []
        assert result.ignored_eos_config_keys == []


@pytest.mark.parametrize(
    "body", ["", "roce:\n  tos: 170\n", "roce:\n  ecn: false\nswitches:\n  pfc_watchdog:\n    enabled: false\n"]
)
def test_avd_renders_the_structured_configuration_to_the_lines_of_the_eos_file(body: str) -> None:
    _, qos = fabric(body)
    for config, cli in files(body):
        rendered = blocks(pyavd.get_device_config({"hostname": "x", **config}))
        ours = blocks(cli)
        assert rendered.keys() == ours.keys()
        for section, lines in ours.items():
            extra = [line for line in lines if line not in eos.cli_only(qos)]
            assert sorted(extra) == sorted(rendered[section]), section


def test_the_structured_configuration_is_written_beside_the_cli(tmp_path) -> None:
    from wizard.switchcfg import plan_jobs, write
    from wizard.switchcfg.model import unconfigured

    view, qos = fabric()
    written = write(tmp_path, "eos", plan_jobs(port_map(view)), qos, unconfigured(view), origin="test")
    names = sorted(p.name for p in written)
    assert "leaf-r0.eos" in names and "leaf-r0.avd.yml" in names
    doc = yaml.safe_load((tmp_path / "eos" / "leaf-r0.avd.yml").read_text())
    assert doc["ethernet_interfaces"][0]["qos"] == {"trust": "dscp"}
    assert re.search(r"AVD: <switch>\.avd\.yml", (tmp_path / "eos" / "README.txt").read_text())
