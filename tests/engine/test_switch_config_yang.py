"""The SONiC files checked by the ecosystem's own validator: libyang's yanglint against the sonic-yang-models of
sonic-buildimage (tests/fixtures/sonic-yang, SOURCES.md), leafrefs to PORT included.

What is validated is what a switch holds after `config load`: the simulated SONiC switch's CONFIG_DB (its first-boot
templates, themselves valid) with switch-config's file merged in. A file keyed by the LLDP alias (etp5) instead of
the port name fails on the leafrefs: the bug that once kept SONiC rails lossy without a single error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.engine.sonic_yang import YANGLINT, errors, yanglint
from wizard.lab.cluster import Lab
from wizard.lab.switch_load import configure_fabric, default_qos
from wizard.lab.switch_os import _state

pytestmark = pytest.mark.skipif(YANGLINT is None, reason="yanglint is not installed (apt install libyang2-tools)")
HOSTS = [f"gpu-{i:03d}" for i in range(1, 4)]


def sonic_fabric(**qos: object) -> Lab:
    import dataclasses

    lab = Lab.rails16(HOSTS, switch_os="sonic")
    configure_fabric(lab, dataclasses.replace(default_qos(), **qos))  # leaves with uplinks, and the spine
    return lab


@pytest.mark.parametrize("qos", [{}, {"buffer_model": "traditional", "cable_m": 40}, {"ecn": False}])
def test_every_switchs_config_db_after_config_load_is_valid_against_the_yang_models(
    qos: dict[str, object], tmp_path: Path
) -> None:
    lab = sonic_fabric(**qos)
    fab = lab.fabric.switches
    assert fab is not None
    for name in ("leaf-r0", "leaf-r7", "spine-0"):
        switch = fab.switches[name]
        assert len(switch.loaded) == 1, name
        db = _state(switch).db  # type: ignore[attr-defined]
        if qos.get("buffer_model") == "traditional":  # the switch runs that model; buffermgrd made the profile
            db["DEVICE_METADATA"]["localhost"]["buffer_model"] = "traditional"
            db["BUFFER_PROFILE"]["pg_lossless_400000_40m_profile"] = {
                "pool": "ingress_lossless_pool", "size": "56368", "xon": "18432", "xoff": "55120", "dynamic_th": "-3"
            }  # fmt: skip
        done = yanglint(db, tmp_path)
        assert done.returncode == 0, (name, errors(done) or done.stderr[-2000:])


def test_a_file_keyed_by_the_lldp_alias_fails_the_port_leafrefs(tmp_path: Path) -> None:
    lab = sonic_fabric()
    leaf = lab.fabric.switches.switches["leaf-r0"]  # type: ignore[union-attr]
    by_name = json.loads(leaf.loaded[0])
    text = leaf.loaded[0]
    for n in range(63, -1, -1):  # Ethernet(8*(n-1)) is etp<n> on the SN5600 (port_config.ini)
        text = text.replace(f'"Ethernet{8 * n}', f'"etp{n + 1}')
    leaf.loaded = [text]
    done = yanglint(_state(leaf).db, tmp_path)  # type: ignore[attr-defined]
    # `config load` made PORT entries etp1.. of ports that do not exist: no lanes, no speed
    assert done.returncode != 0 and 'Mandatory node "lanes"' in "\n".join(errors(done)), done.stderr[-2000:]
    without_port = {table: rows for table, rows in json.loads(text).items() if table != "PORT"}
    leaf.loaded = [json.dumps(without_port)]
    done = yanglint(_state(leaf).db, tmp_path)  # type: ignore[attr-defined]
    found = "\n".join(errors(done))
    # yanglint stops at the first entry naming no port: a plain leafref to PORT, or one of the unions of a leafref
    # and a literal (PFC_WD: a port or GLOBAL; PORT_QOS_MAP: a port or global)
    assert done.returncode != 0 and re.search(r"'etp\d+'", found), done.stderr[-2000:]
    assert "Invalid leafref" in found or "no matching subtype" in found, found
    assert "PORT_QOS_MAP" in by_name and "Ethernet0" in by_name["PORT_QOS_MAP"]
