"""Seed 003 pitfalls: a host driver is never clobbered, bonds RDMA cannot use are refused, NFD labels are required,
and pools never hand out a host's or the gateway's address."""

from __future__ import annotations

import ipaddress

import yaml

from wizard.answers.model import Answers
from wizard.cli.export_k8s import export
from wizard.export.k8s_checks import NFD_LABEL, check, pool_plan
from wizard.export.k8s_inputs import HostRail, Rail, gather
from wizard.export.k8s_objects import ip_pool, nic_cluster_policy, nic_configuration_templates
from wizard.export.k8s_write import build, helm_values


def _no_driver(facts):  # type: ignore[no-untyped-def]
    for host in facts.values():
        host["discovery"]["modules"] = []
        host["discovery"]["ofed_stack"] = None
        for port in host["discovery"]["ports"]:
            port["driver"] = None


def test_host_driver_means_no_ofed_driver_and_a_comment_why(answers, facts):
    manifests = build(gather(answers, facts), driver_container=True)
    policy = manifests[0]
    assert "ofedDriver" not in policy.objects[0]["spec"]
    assert "  # ofedDriver is left out on purpose" in policy.text()
    assert "server1: DOCA 24.10-1.1.4.0" in policy.text()


def test_driver_container_asked_for_over_a_host_driver_is_a_warning(answers, facts):
    findings = check(gather(answers, facts), driver_container=True)
    assert any(w.startswith("--driver-container ignored: server1 (DOCA 24.10-1.1.4.0)") for w in findings.warnings)


def test_driver_container_only_where_no_host_has_a_driver(answers, facts):
    _no_driver(facts)
    inputs = gather(answers, facts)
    assert "ofedDriver" not in nic_cluster_policy(inputs)["spec"]
    assert nic_cluster_policy(inputs, driver_container=True)["spec"]["ofedDriver"]["image"] == "doca-driver"
    assert any("show no RDMA driver" in w for w in check(inputs).warnings)


def test_bond_topology_is_refused_and_nothing_written(answers, facts, tmp_path, capsys):
    data = answers.model_dump(mode="json", exclude_none=True)
    data["network"]["topology"] = "bond"
    data["network"]["rails"] = []
    data["network"]["bonds"] = [
        {"name": "bond0", "mode": "balance-xor", "members": ["ens1f0np0", "ens2f0np0"], "subnet": "192.168.10.0/24"}
    ]
    bonded = Answers.model_validate(data)
    assert export(bonded, facts, tmp_path / "out") == 1
    assert not (tmp_path / "out").exists()
    err = capsys.readouterr().err
    assert "refused" in err and "different cards" in err


def test_a_port_enslaved_to_a_bond_outside_the_design_is_refused(answers, facts):
    facts["server2"]["discovery"]["ports"][0]["master"] = "bond0"
    refusals = check(gather(answers, facts)).refusals
    assert any(r.startswith("server2: ens1f0np0 (mlx5_0) is enslaved to bond0") for r in refusals)


def test_an_export_before_the_driver_stage_is_refused_because_doca_renames_the_devices(answers, facts):
    for host in facts.values():
        disc = host["discovery"]
        disc["ofed_stack"], disc["ofed_version"] = None, None
        for n, port in enumerate(p for p in disc["ports"] if p.get("rdma_device")):
            port["rdma_device"] = f"rocep59s0f{n}"  # the inbox driver's names, before DOCA
    [refusal] = check(gather(answers, facts)).refusals
    assert refusal.startswith("server1, server2 still run the inbox driver (RDMA devices rocep*)")
    assert "roce-wizard --answers FILE --to ofed" in refusal


def test_the_helm_values_leave_nfd_to_the_gpu_operator_and_enable_the_maintenance_operator():
    values = yaml.safe_load(helm_values())
    assert values["nfd"] == {"enabled": False, "deployNodeFeatureRules": True}
    assert values["maintenanceOperator"] == {"enabled": True}
    assert "nicConfigurationOperator" not in values  # no such Helm key since network-operator 25.4
    assert "--set driver.enabled=false" in helm_values()  # the GPU Operator prerequisite, with the host driver


def test_missing_discovery_facts_are_refused(answers, facts):
    del facts["server2"]["discovery"]
    assert check(gather(answers, facts)).refusals[0].startswith("no discovery facts for server2")


def test_every_scheduled_object_requires_the_nfd_label(answers, facts):
    inputs = gather(answers, facts)
    objects = [o for m in build(inputs) for o in m.objects]
    terms = nic_cluster_policy(inputs)["spec"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == NFD_LABEL
    for obj in objects:
        if obj["kind"] == "Pod":
            assert obj["spec"]["nodeSelector"][NFD_LABEL] == "true"
        if obj["kind"] == "IPPool":
            assert obj["spec"]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == NFD_LABEL
        if obj["kind"] == "NicConfigurationTemplate":
            assert obj["spec"]["nodeSelector"] == {NFD_LABEL: "true"}
    assert any("Node Feature Discovery must run" in w for w in check(inputs).warnings)


def test_pool_excludes_host_addresses_and_splits_the_subnet_per_node(answers, facts):
    inputs = gather(answers, facts)
    pool = ip_pool(inputs, inputs.rails[0])["spec"]
    assert pool["subnet"] == "192.168.11.0/24"
    assert pool["perNodeBlockSize"] == 127
    assert pool["exclusions"] == [{"startIP": "192.168.11.1", "endIP": "192.168.11.2"}]


def test_gateway_is_excluded_and_never_a_default_route():
    ends = [HostRail(f"h{i}", "eth0", f"10.10.0.{i}/24", "mlx5_0", "101d") for i in (1, 2, 3)]
    rail = Rail(0, "rail0", ipaddress.ip_network("10.10.0.0/24"), "10.10.0.254", ends)
    plan = pool_plan(rail, 3)
    assert plan.exclusions == [("10.10.0.1", "10.10.0.3"), ("10.10.0.254", "10.10.0.254")]
    assert plan.block == 84 and plan.free_per_node == [81, 84, 84]  # blocks end at .252: the gateway lies beyond them


def test_rail_netdev_names_differing_across_hosts_warn(answers, facts):
    for port in facts["server2"]["discovery"]["ports"]:
        if port["netdev"] == "ens1f0np0":
            port["netdev"] = "enp59s0f0np0"
    for name, iface in list(facts["server2"]["network"]["interfaces"].items()):
        if name == "ens1f0np0":
            iface["name"] = "enp59s0f0np0"
            facts["server2"]["network"]["interfaces"]["enp59s0f0np0"] = facts["server2"]["network"]["interfaces"].pop(
                name
            )
    for link in facts["server2"]["network"]["rdma"]:
        if link["netdev"] == "ens1f0np0":
            link["netdev"] = "enp59s0f0np0"
    inputs = gather(answers, facts)
    assert inputs.rails[0].netdevs == ["enp59s0f0np0", "ens1f0np0"]
    assert any(w.startswith("rail0: the port has different names across hosts") for w in check(inputs).warnings)


def test_nic_configuration_covers_the_rail_ports_found(answers, facts):
    (template,) = nic_configuration_templates(gather(answers, facts))
    selector = template["spec"]["nicSelector"]
    assert selector["nicType"] == "1015"
    assert selector["pciAddresses"] == ["0000:3b:00.0", "0000:3b:00.1", "0000:86:00.0", "0000:86:00.1"]
    assert template["spec"]["template"]["roceOptimized"]["qos"]["trust"] == "dscp"
