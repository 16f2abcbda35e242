"""NVIDIA Network Operator custom resources (release v25.7.0) for the rails: NicClusterPolicy, one nv-ipam IPPool
per rail, one MacvlanNetwork per RoCE rail (an IPoIBNetwork per rail and InfiniBand node group), and a
NicConfigurationTemplate per RoCE NIC type for trust and PFC."""

from __future__ import annotations

import json
from typing import Any

from wizard.export.k8s_checks import NFD_LABEL, host_driver
from wizard.export.k8s_groups import IbGroup, ethernet_view, ib_groups
from wizard.export.k8s_inputs import K8sInputs, Rail
from wizard.export.k8s_pools import pool_plan

RELEASE = "v25.7.0"
NIC_CONFIG_VERSION = f"network-operator-{RELEASE}"  # how NVIDIA tags the NIC Configuration Operator's images
OPERATOR_NAMESPACE = "nvidia-network-operator"
NETWORK_NAMESPACE = "default"
RESOURCE_PREFIX = "rdma"
# Image pins of network-operator v25.7.0 (hack/release.yaml at that tag).
_MELLANOX = "nvcr.io/nvidia/mellanox"
_COMPONENT_VERSION = f"network-operator-{RELEASE}"
DOCA_DRIVER = {"image": "doca-driver", "repository": _MELLANOX, "version": "doca3.1.0-25.07-0.9.7.0-0"}
Obj = dict[str, Any]


def _image(name: str) -> Obj:
    return {"image": name, "repository": _MELLANOX, "version": _COMPONENT_VERSION}


def _nfd_affinity() -> Obj:
    term = {"matchExpressions": [{"key": NFD_LABEL, "operator": "In", "values": ["true"]}]}
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}


def device_plugin_config(inputs: K8sInputs) -> Obj:
    """k8s-rdma-shared-dev-plugin configList: one resource per RoCE rail, selecting that rail's netdevs on PCI vendor
    15b3 and the device ids discovery found on it (a port elsewhere with the same name is not picked up); then one
    resource per InfiniBand node group, selecting the group's IPoIB netdevs (seed 003's rdma_v100 and rdma_a100)."""
    resources = []
    for rail in ethernet_view(inputs).rails:
        selectors: Obj = {"vendors": ["15b3"], "ifNames": rail.netdevs}
        if rail.device_ids:
            selectors["deviceIDs"] = rail.device_ids
        selectors["linkTypes"] = ["ether"]
        resources.append({"resourceName": rail.resource, "rdmaHcaMax": 63, "selectors": selectors})
    for group in ib_groups(inputs):
        selectors = {"ifNames": group.netdevs, "linkTypes": ["infiniband"]}
        resources.append({"resourceName": group.resource, "rdmaHcaMax": 63, "selectors": selectors})
    return {"configList": resources}


def nic_cluster_policy(inputs: K8sInputs, *, driver_container: bool = False) -> Obj:
    """The policy; ofedDriver only where asked for and no host already runs a driver (checked in k8s_checks)."""
    spec: Obj = {"nodeAffinity": _nfd_affinity()}
    # A host without discovery facts (an InfiniBand export from the answers alone) may run a driver nobody saw.
    if driver_container and not host_driver(inputs) and all(h.has_facts for h in inputs.hosts):
        spec["ofedDriver"] = {
            **DOCA_DRIVER,
            "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1, "drain": {"enable": True}},
        }
    spec["rdmaSharedDevicePlugin"] = {
        **_image("k8s-rdma-shared-dev-plugin"),
        "config": json.dumps(device_plugin_config(inputs), indent=2),
    }
    spec["nvIpam"] = {**_image("nvidia-k8s-ipam"), "enableWebhook": False}
    # The NIC Configuration Operator is switched on here, in the policy (Network Operator >= 25.4 has no Helm key for
    # it); it needs the Maintenance Operator, which helm-values.yaml enables (network-operator docs,
    # nic-conf-operator/nic-fw-configuration). Images: the operator's own release tag. Its templates set RoCE QoS
    # on Ethernet ports only; InfiniBand needs none, so an InfiniBand-only cluster leaves it (and its drains) out.
    if ethernet_view(inputs).rails:
        spec["nicConfigurationOperator"] = {
            "operator": {"image": "nic-configuration-operator", "repository": _MELLANOX, "version": NIC_CONFIG_VERSION},
            "configurationDaemon": {
                "image": "nic-configuration-operator-daemon",
                "repository": _MELLANOX,
                "version": NIC_CONFIG_VERSION,
            },
        }
    spec["secondaryNetwork"] = {"cniPlugins": _image("plugins"), "multus": _image("multus-cni")}
    if ib_groups(inputs):
        spec["secondaryNetwork"]["ipoib"] = _image("ipoib-cni")  # the CNI the IPoIBNetworks' attachments run
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy"},
        "spec": spec,
    }


def macvlan_network(inputs: K8sInputs, rail: Rail) -> Obj:
    """A macvlan on the rail's port: pods get an address in the rail subnet and reach the other hosts' rail ports
    over the same cable the host uses (RDMA GIDs follow the macvlan address)."""
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "MacvlanNetwork",
        "metadata": {"name": rail.name},
        "spec": {
            "networkNamespace": NETWORK_NAMESPACE,
            "master": rail.ends[0].netdev,
            "mode": "bridge",
            "mtu": inputs.answers.network.mtu,
            "ipam": json.dumps({"type": "nv-ipam", "poolName": rail.name}),
        },
    }


def ipoib_network(group: IbGroup, rail: Rail) -> Obj:
    """An IPoIB child of the group's port on the rail: the pod's address on the rail subnet, from the rail's nv-ipam
    pool (the release's own example, example/crs/mellanox.com_v1alpha1_ipoibnetwork_cr.yaml, uses nv-ipam; the
    whereabouts ipamPlugin is deprecated in its NicClusterPolicy). RDMA itself goes by LID, not by this address."""
    master = next(e.netdev for e in rail.ends)
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "IPoIBNetwork",
        "metadata": {"name": group.network(rail)},
        "spec": {
            "networkNamespace": NETWORK_NAMESPACE,
            "master": master,
            "ipam": json.dumps({"type": "nv-ipam", "poolName": rail.name}),
        },
    }


def ip_pool(inputs: K8sInputs, rail: Rail) -> Obj:
    plan = pool_plan(rail, len(inputs.hosts))
    spec: Obj = {"subnet": str(plan.subnet or rail.subnet), "perNodeBlockSize": plan.block}
    if plan.exclusions:
        spec["exclusions"] = [{"startIP": a, "endIP": b} for a, b in plan.exclusions]
    if plan.gateway:
        # A rail gateway routes only to the other rails' subnets (per-rail tables); never a pod's default route.
        spec["gateway"] = plan.gateway
        spec["defaultGateway"] = False
    spec["nodeSelector"] = {
        "nodeSelectorTerms": _nfd_affinity()["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    }
    return {
        "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
        "kind": "IPPool",
        "metadata": {"name": rail.name, "namespace": OPERATOR_NAMESPACE},
        "spec": spec,
    }


def pfc_vector(priority: int) -> str:
    """The template's PFC string: eight 0/1 flags, priority 0 first."""
    return ",".join("1" if p == priority else "0" for p in range(max(8, priority + 1)))


def nic_configuration_templates(inputs: K8sInputs) -> list[Obj]:
    """One template per ConnectX device id on the rails: Ethernet, no VFs, trust dscp and PFC on the lossless
    priority, limited to the rail ports' PCI addresses. RoCE ports only: a template's linkType Ethernet on a VPI
    card's InfiniBand port would switch it to Ethernet."""
    inputs = ethernet_view(inputs)
    roce = inputs.answers.roce
    by_type: dict[str, list[str]] = {}
    for host in inputs.hosts:
        rail_netdevs = {
            m for r in inputs.rails for e in r.ends if e.host == host.name for m in (e.members or [e.netdev])
        }
        for port in host.disc.ports:
            if port.netdev in rail_netdevs and port.device_id:
                by_type.setdefault(port.device_id, []).append(port.pci)
    templates = []
    for device_id, pcis in sorted(by_type.items()):
        templates.append(
            {
                "apiVersion": "configuration.net.nvidia.com/v1alpha1",
                "kind": "NicConfigurationTemplate",
                "metadata": {"name": f"roce-{device_id}", "namespace": OPERATOR_NAMESPACE},
                "spec": {
                    "nodeSelector": {NFD_LABEL: "true"},
                    "nicSelector": {"nicType": device_id, "pciAddresses": sorted(set(pcis))},
                    "resetToDefault": False,
                    "template": {
                        "numVfs": 0,
                        "linkType": "Ethernet",
                        "roceOptimized": {
                            "enabled": True,
                            "qos": {"trust": "dscp", "pfc": pfc_vector(roce.priority)},
                        },
                    },
                },
            }
        )
    return templates
