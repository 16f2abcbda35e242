"""Facts from the simulated cluster, read once per session, and helpers to validate generated objects."""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from wizard.answers.model import Answers, load_answers
from wizard.paths import example_answers

SCHEMAS = Path(__file__).resolve().parents[2] / "fixtures" / "k8s-schemas"
_CRDS = {
    "NicClusterPolicy": "mellanox.com_nicclusterpolicies.yaml",
    "MacvlanNetwork": "mellanox.com_macvlannetworks.yaml",
    "HostDeviceNetwork": "mellanox.com_hostdevicenetworks.yaml",
    "IPoIBNetwork": "mellanox.com_ipoibnetworks.yaml",
    "IPPool": "nv-ipam.nvidia.com_ippools.yaml",
    "CIDRPool": "nv-ipam.nvidia.com_cidrpools.yaml",
    "NicConfigurationTemplate": "configuration.net.nvidia.com_nicconfigurationtemplates.yaml",
}


def _crd(kind: str) -> tuple[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((SCHEMAS / _CRDS[kind]).read_text()) if d]
    crd = docs[0]
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    return f"{crd['spec']['group']}/{version['name']}", version["schema"]["openAPIV3Schema"]


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Every error of ``obj`` against its CRD's openAPIV3Schema (pinned release) or the minimal core/v1 schema."""
    kind = obj.get("kind")
    if kind in _CRDS:
        api_version, schema = _crd(kind)
        errors = (
            [] if obj.get("apiVersion") == api_version else [f"apiVersion {obj.get('apiVersion')} != {api_version}"]
        )
    else:
        core = json.loads((SCHEMAS / "k8s-core-v1.30-minimal.json").read_text())
        schema = core["kinds"].get(kind)
        if schema is None:
            return [f"no schema for kind {kind}"]
        errors = []
    validator = jsonschema.Draft7Validator(schema)
    return errors + [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]


@pytest.fixture(scope="session")
def answers() -> Answers:
    return load_answers(example_answers())


def _lab_facts(answers: Answers, profile: str, state_dir: Path) -> dict[str, dict[str, Any]]:
    """Discovery and network facts of a simulated lab, read as `export k8s --demo` reads them."""
    from wizard.cli.export_k8s import _probe

    old = os.environ.get("ROCE_WIZARD_LAB_TIME_SCALE")
    os.environ["ROCE_WIZARD_LAB_TIME_SCALE"] = "0.001"
    try:
        args = argparse.Namespace(demo=True, fault=[], state_dir=state_dir, profile=profile)
        return asyncio.run(_probe(args, answers))
    finally:
        if old is None:
            os.environ.pop("ROCE_WIZARD_LAB_TIME_SCALE", None)
        else:
            os.environ["ROCE_WIZARD_LAB_TIME_SCALE"] = old


@pytest.fixture(scope="session")
def _demo_facts(answers: Answers, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return _lab_facts(answers, "reference", tmp_path_factory.mktemp("state"))


@pytest.fixture
def facts(_demo_facts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The simulated hosts' discovery and network facts; a fresh copy each test may change."""
    return copy.deepcopy(_demo_facts)


IB_ANSWERS = Path(__file__).resolve().parents[3] / "assets" / "answers.ib-seed003.yaml"


@pytest.fixture(scope="session")
def ib_answers() -> Answers:
    """Seed 003's cluster: V100 nodes on 100G and A100 nodes on 200G InfiniBand, groups v100 and a100."""
    return load_answers(IB_ANSWERS)


@pytest.fixture(scope="session")
def _ib_demo_facts(ib_answers: Answers, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return _lab_facts(ib_answers, "ib-seed003", tmp_path_factory.mktemp("ib-state"))


@pytest.fixture
def ib_facts(_ib_demo_facts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The simulated seed 003 hosts' facts (wizard/lab/profile_ib.py: IPoIB netdevs ibp94s0f0/ibp94s0f1 on the V100
    nodes, ibp75s0/ibp177s0 on the A100 nodes, DOCA host driver); a fresh copy each test may change."""
    return copy.deepcopy(_ib_demo_facts)


def host_like(template: dict[str, Any], name: str, ports: list[dict[str, Any]], gpu: str, gpus: int = 8) -> dict:
    """Facts of another host made from a simulated host's discovery facts (driver stack, modules, packages kept):
    these ports and GPUs instead of its own, and no network facts (the design needs only the ports)."""
    disc = copy.deepcopy(template["discovery"])
    base = {**disc["ports"][0], "gids": [], "mac": None, "ipv4": [], "master": None, "lldp": None}
    disc["hostname"] = name
    disc["ports"] = [{**copy.deepcopy(base), **port} for port in ports]
    first = disc["gpus"][0]
    disc["gpus"] = [{**first, "index": i, "name": gpu, "bus_id": None, "nearest_nics": []} for i in range(gpus)]
    return {"discovery": disc}


RAILS16_ANSWERS = Path(__file__).resolve().parents[3] / "assets" / "answers.rails-16.yaml"
# The rails-16 demo hosts' eight single-port ConnectX-7 NICs, one per rail (the answers' comments name them).
RAILS16_BUSES = (24, 64, 79, 94, 154, 192, 206, 220)


@pytest.fixture
def rails16_answers() -> Answers:
    return load_answers(RAILS16_ANSWERS)


@pytest.fixture
def rails16_facts(_demo_facts: dict[str, dict[str, Any]], rails16_answers: Answers) -> dict[str, dict[str, Any]]:
    """The 16 rails-16 hosts from the simulated server1's facts: eight 400GbE RoCE ports each (the full rails-16
    lab takes most of a minute to boot; the pools depend only on the answers' rails and the hosts' rail ports)."""
    ports = [
        {
            "pci": f"0000:{bus:02x}:00.0",
            "device_id": "1021",
            "model": "ConnectX-7",
            "netdev": f"enp{bus}s0np0",
            "rdma_device": f"mlx5_{n}",
            "link_layer": "Ethernet",
            "speed_mbps": 400000,
        }
        for n, bus in enumerate(RAILS16_BUSES)
    ]
    return {
        h.name: host_like(_demo_facts["server1"], h.name, ports, "NVIDIA H100 80GB HBM3") for h in rails16_answers.hosts
    }
