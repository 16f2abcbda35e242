"""Seed 003's InfiniBand cluster (V100 nodes on 100G, A100 nodes on 200G): one RDMA resource and one set of IPoIB
networks and test pods per node group, validated against the release's CRD schemas; no driver container over the
hosts' own driver stack."""

from __future__ import annotations

import copy
import json
import os
import subprocess

import yaml

from tests.handoff.k8s.conftest import schema_errors
from wizard.answers.model import Answers
from wizard.cli.export_k8s import export
from wizard.export.k8s_checks import check
from wizard.export.k8s_groups import ib_groups
from wizard.export.k8s_ib_pods import SCRIPT_NAME
from wizard.export.k8s_inputs import gather
from wizard.export.k8s_objects import nic_cluster_policy
from wizard.export.k8s_pods import script
from wizard.export.k8s_write import build, helm_values

V100 = {"resourceName": "rdma_v100", "rdmaHcaMax": 63}
A100 = {"resourceName": "rdma_a100", "rdmaHcaMax": 63}


def _objects(answers, facts, **kw):  # type: ignore[no-untyped-def]
    return [o for m in build(gather(answers, facts), **kw) for o in m.objects]


def _answers(answers: Answers, **fabric) -> Answers:  # type: ignore[no-untyped-def]
    data = answers.model_dump(mode="json", exclude_none=True)
    data["fabric"].update(fabric)
    return Answers.model_validate(data)


def _env(pod):  # type: ignore[no-untyped-def]
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0].get("env", [])}


def test_one_device_plugin_resource_per_node_group(ib_answers, ib_facts):
    inputs = gather(ib_answers, ib_facts)
    assert check(inputs).refusals == []
    spec = nic_cluster_policy(inputs)["spec"]
    assert json.loads(spec["rdmaSharedDevicePlugin"]["config"])["configList"] == [
        {**V100, "selectors": {"ifNames": ["ibp94s0f0", "ibp94s0f1"], "linkTypes": ["infiniband"]}},
        {**A100, "selectors": {"ifNames": ["ibp75s0", "ibp177s0"], "linkTypes": ["infiniband"]}},
    ]
    assert spec["secondaryNetwork"]["ipoib"]["image"] == "ipoib-cni"
    # No RoCE QoS on InfiniBand: a template's linkType Ethernet would flip the VPI ports.
    assert "nicConfigurationOperator" not in spec
    assert not [o for o in _objects(ib_answers, ib_facts) if o["kind"] == "NicConfigurationTemplate"]


def test_every_infiniband_object_passes_its_schema(ib_answers, ib_facts):
    objects = _objects(ib_answers, ib_facts)
    assert sorted({o["kind"] for o in objects}) == [
        "ConfigMap",
        "IPPool",
        "IPoIBNetwork",
        "NicClusterPolicy",
        "Pod",
        "Service",
    ]
    for obj in objects:
        assert schema_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])
    ipoib = copy.deepcopy(next(o for o in objects if o["kind"] == "IPoIBNetwork"))
    ipoib["spec"]["master"] = ["ibp94s0f0"]
    assert any("master" in e and "is not of type 'string'" in e for e in schema_errors(ipoib))


def test_ipoib_networks_per_rail_and_group_with_the_rail_pools(ib_answers, ib_facts):
    objects = _objects(ib_answers, ib_facts)
    assert not [o for o in objects if o["kind"] == "MacvlanNetwork"]
    networks = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "IPoIBNetwork"}
    assert {name: spec["master"] for name, spec in networks.items()} == {
        "rail0-v100": "ibp94s0f0",
        "rail1-v100": "ibp94s0f1",
        "rail0-a100": "ibp75s0",
        "rail1-a100": "ibp177s0",
    }
    assert json.loads(networks["rail1-a100"]["ipam"]) == {"type": "nv-ipam", "poolName": "rail1"}
    pools = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "IPPool"}
    assert pools["rail0"]["subnet"] == "10.20.0.0/24" and pools["rail1"]["subnet"] == "10.20.1.0/24"
    assert pools["rail0"]["exclusions"] == [{"startIP": "10.20.0.1", "endIP": "10.20.0.4"}]  # the four hosts


def test_group_pods_request_their_resource_on_their_nodes(ib_answers, ib_facts):
    pods = {o["metadata"]["name"]: o for o in _objects(ib_answers, ib_facts) if o["kind"] == "Pod"}
    assert sorted(pods) == [
        "client-a100",
        "client-v100",
        "nccl-a100-0",
        "nccl-a100-1",
        "nccl-v100-0",
        "nccl-v100-1",
        "server-a100",
        "server-v100",
    ]
    groups = {"v100": ("v100-01", "v100-02"), "a100": ("a100-01", "a100-02")}
    for name, pod in pods.items():
        group = "a100" if "a100" in name else "v100"
        container = pod["spec"]["containers"][0]
        assert pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] in groups[group]
        assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == (
            f"default/rail0-{group},default/rail1-{group}"
        )
        assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        assert container["resources"]["limits"][f"rdma/rdma_{group}"] == 1
        assert not {k for k in container["resources"]["limits"] if k.startswith("rdma/") and group not in k}
        # seed 003: "Couldn't allocate MR" when a pod with RDMA resources has a memory limit
        assert "memory" not in container["resources"]["limits"] and "memory" not in container["resources"]["requests"]
    nccl = pods["nccl-a100-1"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in nccl["spec"]["volumes"]
    assert nccl["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert "--master-addr=nccl-a100-0.rdma-test" in nccl["spec"]["containers"][0]["command"]
    assert pods["client-v100"]["spec"]["containers"][0]["command"] == [
        f"/scripts/{SCRIPT_NAME}",
        "client",
        "server-v100.rdma-test",
        "mlx5_0:1:18515",
        "mlx5_1:1:18516",
    ]


def test_nccl_over_infiniband_names_exact_devices_and_no_roce_settings(ib_answers, ib_facts):
    pods = {o["metadata"]["name"]: o for o in _objects(ib_answers, ib_facts) if o["kind"] == "Pod"}
    for name in ("nccl-v100-0", "nccl-a100-1"):
        env = _env(pods[name])
        assert env["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1"
        assert not {"NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_SL"} & set(env)
    with_sl = _answers(ib_answers, ib_sl=3)
    pods = {o["metadata"]["name"]: o for o in _objects(with_sl, ib_facts) if o["kind"] == "Pod"}
    assert _env(pods["nccl-v100-0"])["NCCL_IB_SL"] == "3"
    assert _env(pods["server-a100"]) == {"IB_SL": "3"}


def test_host_driver_stack_means_no_driver_container_and_the_readme_says_why(ib_answers, ib_facts, tmp_path):
    assert export(ib_answers, ib_facts, tmp_path / "out", driver_container=True) == 0
    policy = yaml.safe_load_all((tmp_path / "out" / "10-nic-cluster-policy.yaml").read_text())
    assert "ofedDriver" not in next(policy)["spec"]
    readme = " ".join((tmp_path / "out" / "README.md").read_text().split())
    assert "DOCA 24.10-1.1.4.0 on v100-01, v100-02, a100-01, a100-02" in readme
    assert (
        "a containerised driver over a host driver reloads mlx5_core under the running host stack; seed 003 lost a "
        "node for hours to it" in readme
    )
    for host in ib_facts.values():
        host["discovery"].update(ofed_stack=None, ofed_version=None, modules=[])
        for port in host["discovery"]["ports"]:
            port["driver"] = None
    inputs = gather(ib_answers, ib_facts)
    assert "ofedDriver" not in nic_cluster_policy(inputs)["spec"]
    assert nic_cluster_policy(inputs, driver_container=True)["spec"]["ofedDriver"]["image"] == "doca-driver"


def test_readme_and_helm_values_name_the_groups_resources_and_networks(ib_answers, ib_facts, tmp_path):
    assert export(ib_answers, ib_facts, tmp_path) == 0
    readme = (tmp_path / "README.md").read_text()
    assert "- `v100`: resource `rdma/rdma_v100` on v100-01, v100-02; networks `rail0-v100`" in readme
    assert "- `a100`: resource `rdma/rdma_a100` on a100-01, a100-02; networks `rail0-a100`" in readme
    assert "## What the NicConfigurationTemplate cannot express" not in readme
    assert not (tmp_path / "40-nic-configuration.yaml").exists()
    values = helm_values(gather(ib_answers, ib_facts))
    assert "#   v100: rdma/rdma_v100, networks rail0-v100, rail1-v100" in values
    assert "#   a100: rdma/rdma_a100, networks rail0-a100, rail1-a100" in values
    assert yaml.safe_load(values)["maintenanceOperator"] == {"enabled": False}  # no NIC Configuration Operator


def test_auto_link_layer_follows_discovery(ib_answers, ib_facts, answers, facts):
    auto = _answers(ib_answers, link_layer="auto")
    assert [g.name for g in ib_groups(gather(auto, ib_facts))] == ["v100", "a100"]
    roce_auto = _answers(answers, link_layer="auto")  # the reference pair's ports run Ethernet
    assert ib_groups(gather(roce_auto, facts)) == []
    assert _objects(roce_auto, facts) == _objects(answers, facts)


def test_export_from_the_answers_alone_uses_the_rails_netdevs(ib_answers):
    data = ib_answers.model_dump(mode="json", exclude_none=True)
    data["fabric"]["groups"] = [{"name": "v100", "hosts": ["v100-01", "v100-02", "a100-01", "a100-02"]}]
    data["network"]["rails"][0]["netdev"], data["network"]["rails"][1]["netdev"] = "ib0", "ib1"
    inputs = gather(Answers.model_validate(data), {})
    findings = check(inputs)
    assert findings.refusals == []
    assert any(
        "no discovery facts, so the RDMA device plugin selects the answers' rails netdevs (ib0, ib1)" in w
        for w in findings.warnings
    )
    config = json.loads(nic_cluster_policy(inputs, driver_container=True)["spec"]["rdmaSharedDevicePlugin"]["config"])
    assert config["configList"][0]["selectors"]["ifNames"] == ["ib0", "ib1"]
    assert "ofedDriver" not in nic_cluster_policy(inputs, driver_container=True)["spec"]  # drivers unseen
    pods = [o for m in build(inputs) for o in m.objects if o["kind"] == "Pod"]
    assert [p["metadata"]["name"] for p in pods] == ["nccl-v100-0", "nccl-v100-1"]
    assert "NCCL_IB_HCA" not in _env(pods[0])


def test_an_ipoib_port_held_by_a_bond_is_refused(ib_answers, ib_facts):
    ib_facts["a100-01"]["discovery"]["ports"][1]["master"] = "bond0"
    refusals = check(gather(ib_answers, ib_facts)).refusals
    assert any(r.startswith("a100-01: ibp177s0 (mlx5_1) is enslaved to bond0: an IPoIB bond") for r in refusals)


def test_infiniband_script_runs_perftest_by_lid_with_the_service_level(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ib_write_bw").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\n')
    (bin_dir / "ib_write_bw").chmod(0o755)
    (tmp_path / SCRIPT_NAME).write_text(script(SCRIPT_NAME))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "IB_SL": "3"}
    run = subprocess.run(
        ["sh", str(tmp_path / SCRIPT_NAME), "client", "server-v100.rdma-test", "mlx5_0:1:18515", "mlx5_1:1:18516"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 0, run.stderr
    calls = sorted((tmp_path / "calls").read_text().splitlines())
    assert calls == [
        "-d mlx5_0 -i 1 -p 18515 -F -D 10 --report_gbits --sl=3 server-v100.rdma-test",
        "-d mlx5_1 -i 1 -p 18516 -F -D 10 --report_gbits --sl=3 server-v100.rdma-test",
    ]
    assert subprocess.run(["sh", "-n", str(tmp_path / SCRIPT_NAME)]).returncode == 0


def test_a_cluster_mixing_roce_hosts_and_infiniband_groups(ib_answers, ib_facts, facts):
    data = ib_answers.model_dump(mode="json", exclude_none=True)
    data["hosts"] += [{"name": "server1", "address": "10.0.0.21"}, {"name": "server2", "address": "10.0.0.22"}]
    data["fabric"]["groups"].append({"name": "l20", "hosts": ["server1", "server2"], "link_layer": "ethernet"})
    inputs = gather(
        Answers.model_validate(data), {**ib_facts, "server1": facts["server1"], "server2": facts["server2"]}
    )
    assert check(inputs).refusals == []
    objects = [o for m in build(inputs) for o in m.objects]
    for obj in objects:
        assert schema_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])
    config = json.loads(objects[0]["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"]
    # The RoCE rails keep their per-rail resources, selecting RoCE netdevs only; each InfiniBand group has its own.
    assert [c["resourceName"] for c in config] == ["rdma_rail0", "rdma_rail1", "rdma_v100", "rdma_a100"]
    assert config[0]["selectors"] == {
        "vendors": ["15b3"],
        "ifNames": ["ens1f0np0"],
        "deviceIDs": ["1015"],
        "linkTypes": ["ether"],
    }
    names = [(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"].endswith("Network")]
    assert names == [  # no NetworkAttachmentDefinition name taken twice
        ("MacvlanNetwork", "rail0"),
        ("MacvlanNetwork", "rail1"),
        ("IPoIBNetwork", "rail0-v100"),
        ("IPoIBNetwork", "rail1-v100"),
        ("IPoIBNetwork", "rail0-a100"),
        ("IPoIBNetwork", "rail1-a100"),
    ]
    (template,) = [o for o in objects if o["kind"] == "NicConfigurationTemplate"]
    assert template["spec"]["nicSelector"]["pciAddresses"] == ["0000:3b:00.0", "0000:3b:00.1"]  # no VPI IB port
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    assert _env(pods["nccl-0"])["NCCL_IB_TC"] == "106" and "NCCL_IB_TC" not in _env(pods["nccl-v100-0"])
