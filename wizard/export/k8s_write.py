"""The Kubernetes export as files: numbered manifests in apply order, Helm values and a README."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from wizard.export import k8s_ib_pods as ib_pods
from wizard.export import k8s_ib_write as ib_write
from wizard.export import k8s_objects as objects
from wizard.export import k8s_pods as pods
from wizard.export.k8s_checks import NFD_LABEL, Findings, host_driver
from wizard.export.k8s_groups import IbGroup, ethernet_view, ib_groups
from wizard.export.k8s_inputs import K8sInputs
from wizard.export.k8s_pools import pool_plan

Obj = dict[str, Any]


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (device plugin config, scripts) as readable literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


@dataclass
class Manifest:
    """One file of the export: a comment header and its objects."""

    name: str
    header: str
    objects: list[Obj] = field(default_factory=list)
    spec_note: str | None = None  # a comment placed under the first `spec:` (why something is left out)

    def text(self) -> str:
        header = "".join(f"# {line}".rstrip() + "\n" for line in self.header.splitlines())
        docs = [yaml.dump(o, Dumper=_Dumper, sort_keys=False, width=120) for o in self.objects]
        if self.spec_note and docs:
            note = "".join(f"  # {line}".rstrip() + "\n" for line in self.spec_note.splitlines())
            docs[0] = docs[0].replace("spec:\n", "spec:\n" + note, 1)
        return header + "---\n" + "---\n".join(docs)


def build(inputs: K8sInputs, *, driver_container: bool = False) -> list[Manifest]:
    """Every manifest, in the order they are applied."""
    roce, groups = ethernet_view(inputs), ib_groups(inputs)
    policy = objects.nic_cluster_policy(inputs, driver_container=driver_container)
    drivers = host_driver(inputs)
    note = None
    if "ofedDriver" not in policy["spec"]:
        found = ", ".join(f"{h}: {d}" for h, d in drivers.items()) or "none found; --driver-container not given"
        note = (
            "ofedDriver is left out on purpose: the hosts run their own RDMA driver, and the DOCA driver container\n"
            "would unload and replace it on every node it lands on (seed 003). The host driver stays in charge.\n"
            f"Host drivers: {found}"
        )
    pools_header = (
        "nv-ipam pools, one per rail: the rail subnet in per-node blocks; the hosts' own rail addresses and the\n"
        "rail gateway are excluded."
    )
    if any(pool_plan(r, len(inputs.hosts)).subnet != r.subnet for r in inputs.rails):
        pools_header += "\nWhere a pool's subnet is part of the rail subnet, see the README's warnings for why."
    networks_header = (
        "One MacvlanNetwork per rail (a NetworkAttachmentDefinition of the same name in namespace "
        f"{objects.NETWORK_NAMESPACE})."
    )
    if groups:
        networks_header = (
            ("One MacvlanNetwork per RoCE rail and one" if roce.rails else "One")
            + " IPoIBNetwork per rail and InfiniBand node group (each a NetworkAttachmentDefinition of the same\n"
            f"name in namespace {objects.NETWORK_NAMESPACE})."
        )
    networks = [objects.macvlan_network(roce, r) for r in roce.rails]
    networks += [objects.ipoib_network(g, r) for g in groups for r in g.rails]
    out = [
        Manifest(
            "10-nic-cluster-policy.yaml", f"NicClusterPolicy (network-operator {objects.RELEASE}).", [policy], note
        ),
        Manifest("20-ip-pools.yaml", pools_header, [objects.ip_pool(inputs, r) for r in inputs.rails]),
        Manifest("30-rail-networks.yaml", networks_header, networks),
    ]
    if roce.rails:
        out.append(
            Manifest(
                "40-nic-configuration.yaml",
                "NIC Configuration Operator templates: trust dscp and PFC on the lossless priority (see README for "
                "what\nthey cannot express). The operator runs from 10-nic-cluster-policy.yaml and drains nodes "
                "through the\nMaintenance Operator (maintenanceOperator.enabled in helm-values.yaml).",
                objects.nic_configuration_templates(roce),
            )
        )
    return out + _test_manifests(inputs, roce, groups)


def _test_manifests(inputs: K8sInputs, roce: K8sInputs, groups: list[IbGroup]) -> list[Manifest]:
    """The ib_write_bw and NCCL pods: the RoCE pair as always, then one pair per InfiniBand group."""
    pair = pods.pair_hosts(roce) if roce.rails else None
    ib_perftest, ib_nccl, perf_lines, nccl_lines = ib_write.group_test_pods(inputs, groups)
    perftest, nccl = list(ib_perftest), list(ib_nccl)
    if pair:
        perftest = pods.perftest_pods(roce, pair) + perftest
        nccl = pods.nccl_pods(roce, pair) + nccl
        perf_lines.insert(
            0, f"ib_write_bw on every rail: server on {pair[0]}, client on {pair[1]} (kubectl logs client)."
        )
        nccl_lines.insert(
            0,
            f"NCCL all_reduce across {pair[0]} and {pair[1]} (kubectl logs nccl-0); apply 50-rdma-test.yaml\n"
            "first for its ConfigMap and Service.",
        )
    elif nccl_lines:
        nccl_lines.append("Apply 50-rdma-test.yaml first for its ConfigMap and Service.")
    if not nccl:
        return []
    scripts = pods.scripts_config_map()
    if ib_perftest:
        scripts["data"][ib_pods.SCRIPT_NAME] = pods.script(ib_pods.SCRIPT_NAME)
    common = [scripts, pods.headless_service()]
    return [
        Manifest(
            "50-rdma-test.yaml", "\n".join(perf_lines) or "The test pods' ConfigMap and Service.", [*common, *perftest]
        ),
        Manifest("60-nccl-test.yaml", "\n".join(nccl_lines), nccl),
    ]


def helm_values(inputs: K8sInputs | None = None) -> str:
    groups = ib_groups(inputs) if inputs is not None else []
    maintenance = (
        "# The NIC Configuration Operator (enabled in 10-nic-cluster-policy.yaml, applies 40-nic-configuration.yaml)\n"
        "# drains a node through the Maintenance Operator before it changes the NIC.\n"
        "maintenanceOperator:\n  enabled: true\n"
        "maintenance-operator-chart:\n  operatorConfig:\n    deploy: true\n"
    )
    if inputs is not None and not ethernet_view(inputs).rails:
        # InfiniBand only: no NicConfigurationTemplate, so no NIC Configuration Operator and nothing to drain for.
        maintenance = (
            "# No NIC Configuration Operator (InfiniBand needs no NIC QoS templates), so no Maintenance Operator.\n"
            "maintenanceOperator:\n  enabled: false\n"
        )
    return (
        f"# Helm values for nvidia/network-operator {objects.RELEASE}:\n"
        f"#   helm install network-operator nvidia/network-operator -n {objects.OPERATOR_NAMESPACE} "
        f"--create-namespace --version {objects.RELEASE} -f helm-values.yaml\n"
        "# Install the NVIDIA GPU Operator first (helm install gpu-operator nvidia/gpu-operator -n gpu-operator\n"
        "#   --create-namespace --set driver.enabled=false): the wizard installed the GPU driver on the hosts,\n"
        "#   and the GPU Operator deploys Node Feature Discovery. NVIDIA: one NFD per cluster, the GPU Operator's.\n"
        "nfd:\n  enabled: false  # the GPU Operator's NFD labels the nodes\n"
        f"  deployNodeFeatureRules: true  # the rule that sets {NFD_LABEL}, which every manifest here selects\n"
        + maintenance
        + "sriovNetworkOperator:\n  enabled: false\n"
        + ib_write.helm_comments(groups)
    )


def _driver_section(inputs: K8sInputs, manifests: list[Manifest]) -> str:
    """Why the policy has no ofedDriver, where hosts run their own driver stack."""
    drivers = host_driver(inputs)
    if not drivers or "ofedDriver" in manifests[0].objects[0]["spec"]:
        return ""
    by_driver: dict[str, list[str]] = {}
    for host, driver in drivers.items():
        by_driver.setdefault(driver, []).append(host)
    listing = "; ".join(
        f"{d} on {', '.join(h) if len(h) <= 4 else f'{len(h)} hosts ({h[0]} ... {h[-1]})'}"
        for d, h in by_driver.items()
    )
    text = (
        f"10-nic-cluster-policy.yaml has no ofedDriver: the hosts run their own RDMA driver stack ({listing}), "
        f"and {ib_write.DRIVER_WHY}. The host stack stays in charge (the wizard's ofed "
        "stage updates it); `--driver-container` adds the DOCA driver container only where no host runs a driver."
    )
    return "\n## Host driver\n" + textwrap.fill(text, width=115, break_on_hyphens=False) + "\n"


def _roce_sections(inputs: K8sInputs, roce: K8sInputs) -> tuple[str, str]:
    """The README's rail list and the NicConfigurationTemplate limits, for the RoCE rails."""
    if not roce.rails:
        return "", ""
    rails = "\n".join(
        f"- `{r.name}`: {r.subnet}, resource `{objects.RESOURCE_PREFIX}/{r.resource}`, "
        + ", ".join(f"{e.host} {e.netdev} ({e.rdma_device})" for e in r.ends)
        for r in roce.rails
    )
    qos = inputs.answers.roce
    limits = f"""
## What the NicConfigurationTemplate cannot express
It sets trust `dscp` and PFC on priority {qos.priority} only. These stay with the wizard's roce stage (runtime
settings re-applied after every boot): the RDMA ToS {qos.tos} (DSCP {qos.dscp}) for RDMA-CM and perftest, ECN/DCQCN
enable per priority, the CNP DSCP {qos.cnp_dscp} and priority {qos.cnp_priority} (the template writes the firmware
defaults CNP_DSCP=4/CNP_802P_PRIO=6), a non-default dscp2prio map, the MTU {inputs.answers.network.mtu} (netplan),
and lldpad (which rewrites PFC; keep it stopped). Test pods set NCCL_IB_TC={qos.tos} themselves.
"""
    return f"\n## Rails\n{rails}\n", limits


def readme(inputs: K8sInputs, findings: Findings, manifests: list[Manifest]) -> str:
    groups = ib_groups(inputs)
    rails, limits = _roce_sections(inputs, ethernet_view(inputs))
    warnings = "\n".join(f"- {w}" for w in findings.warnings) or "- none"
    files = "\n".join(f"kubectl apply -f {m.name}" for m in manifests)
    cluster = inputs.answers.cluster.name
    return f"""# Kubernetes hand-off for cluster `{cluster}` (NVIDIA Network Operator {objects.RELEASE})

Generated by `roce-wizard export k8s` from the answers and the hosts' discovery facts. Node names must be the
host names of the answers (the test pods select `kubernetes.io/hostname`).
{rails}{ib_write.readme_sections(inputs, groups)}
## Apply
The NVIDIA GPU Operator comes first: it exposes the GPUs (`nvidia.com/gpu`) and deploys the one Node Feature
Discovery the cluster should run (`helm-values.yaml` keeps the Network Operator's own NFD off). The wizard already
installed the GPU driver on the hosts, so the GPU Operator must not install another.
```
helm install gpu-operator nvidia/gpu-operator -n gpu-operator --create-namespace --set driver.enabled=false
helm install network-operator nvidia/network-operator -n {objects.OPERATOR_NAMESPACE} --create-namespace \\
  --version {objects.RELEASE} -f helm-values.yaml
{files}
```

## Warnings
{warnings}
{_driver_section(inputs, manifests)}{limits}"""


def write(out: Path, inputs: K8sInputs, findings: Findings, manifests: list[Manifest]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for manifest in manifests:
        path = out / manifest.name
        path.write_text(manifest.text())
        written.append(path)
    for name, text in (("helm-values.yaml", helm_values(inputs)), ("README.md", readme(inputs, findings, manifests))):
        (out / name).write_text(text)
        written.append(out / name)
    return written
