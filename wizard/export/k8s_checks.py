"""Pitfalls of running RDMA under the NVIDIA Network Operator (seed 003), checked before anything is written."""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.export.k8s_groups import ethernet_view, ib_groups
from wizard.export.k8s_inputs import K8sInputs, Rail
from wizard.export.k8s_pools import PoolPlan, pool_plan
from wizard.export.k8s_pools import refusal as pool_refusal

__all__ = ["NFD_LABEL", "Findings", "PoolPlan", "check", "host_driver", "pool_plan"]

NFD_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
_HOST_DRIVER_MODULES = ("mlx5_core", "mlx5_ib")
_NV_IPAM = "network-operator-v25.7.0"  # the nv-ipam image the policy pins (k8s_objects.RELEASE)


@dataclass
class Findings:
    """Warnings are printed and written to the README; refusals stop the export (nothing is written)."""

    warnings: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)


def host_driver(inputs: K8sInputs) -> dict[str, str]:
    """Hosts that already run an RDMA driver and which one (DOCA/MLNX_OFED or the inbox kernel's mlx5)."""
    found = {}
    for host in inputs.hosts:
        disc = host.disc
        if disc.ofed_stack:
            found[host.name] = f"{disc.ofed_stack} {disc.ofed_version or ''}".strip()
        elif any(m in disc.modules for m in _HOST_DRIVER_MODULES) or any(p.driver == "mlx5_core" for p in disc.ports):
            found[host.name] = "inbox mlx5_core"
    return found


def check(inputs: K8sInputs, *, driver_container: bool = False) -> Findings:
    """Every pitfall the export knows, as warnings or refusals with the reason and the fix."""
    out = Findings()
    if inputs.missing_facts:
        out.refusals.append(
            f"no discovery facts for {', '.join(inputs.missing_facts)}: the resources select the netdevs and PCI "
            "device ids discovery found; run `roce-wizard --answers F --only discovery` (or pass --demo)"
        )
        return out
    out.refusals.extend(inputs.blockers)
    roce = ethernet_view(inputs)  # the whole cluster unless some hosts run InfiniBand (_ib_checks below)
    _bonds(roce, out)
    if not inputs.rails and not out.refusals:
        out.refusals.append("the design has no RDMA rail on any host: nothing for the RDMA device plugin to select")
    _driver(inputs, out, driver_container)
    roce_rails = {r.key: r for r in roce.rails}
    for rail in inputs.rails:
        if rail.key in roce_rails:
            _same_netdev(roce_rails[rail.key], out)
        _pool_fits(rail, len(inputs.hosts), out)
    if roce.hosts:
        _qos_limits(roce, out)
    _ib_checks(inputs, out)
    out.warnings.append(
        f"every DaemonSet, pool and test pod selects nodes labelled {NFD_LABEL}=true: Node Feature Discovery must "
        "run; helm-values.yaml leaves it to the GPU Operator (install that first), so set nfd.enabled: true there"
        " only on a cluster without the GPU Operator"
    )
    _device_names(inputs, out)
    return out


def _device_names(inputs: K8sInputs, out: Findings) -> None:
    """An export made before the DOCA/MLNX_OFED driver is in names the inbox devices (rocep<bus>s<slot>f<fn>); the
    driver renames them mlx5_N, so NCCL_IB_HCA and the test pods would name devices that no longer exist."""
    stack = inputs.answers.ofed.stack
    if stack == "inbox":
        return
    # rdma-core names inbox devices by link layer: rocep<bus>s<slot>f<fn> on Ethernet, ibp<bus>s<slot>f<fn> on IB.
    early = [h.name for h in inputs.hosts if not h.disc.ofed_stack and any(
        (p.rdma_device or "").startswith(("rocep", "ibp")) for p in h.disc.rdma_ports())]  # fmt: skip
    if early:
        names = "/".join(
            f"{prefix}*"
            for prefix in ("rocep", "ibp")
            if any((p.rdma_device or "").startswith(prefix) for h in inputs.hosts for p in h.disc.rdma_ports())
        )
        out.refusals.append(
            f"{', '.join(early)} still run the inbox driver (RDMA devices {names}), but the answers install {stack},"
            " which renames them mlx5_N: the exported NCCL_IB_HCA and test pods would name devices that will not exist."
            " Run the ofed stage first (roce-wizard --answers FILE --to ofed), then export again"
        )


def _bonds(inputs: K8sInputs, out: Findings) -> None:
    topology = inputs.answers.network.topology
    if topology == "bond":
        out.refusals.append(
            "network.topology is bond: RDMA never passes through the Linux bonding driver, so the RDMA shared "
            "device plugin would hand pods a bond no RDMA device carries (roce-correctness.md §0); use topology "
            "rails (one resource per port) or roce_lag (the two ports of one card)"
        )
    if any(rail.ends and rail.ends[0].lag for rail in inputs.rails):
        out.warnings.append(
            "RoCE LAG bonds (mlx5_bond_N) are exported as one resource each; NVIDIA's RoCE-over-LAG note calls LAG "
            "'not suitable for K8s and NCCL-based AI applications': rails are the design to prefer"
        )
    lag_members = {m for rail in inputs.rails for e in rail.ends for m in e.members}
    for host in inputs.hosts:
        for port in host.disc.rdma_ports():
            if port.master and port.netdev not in lag_members:
                out.refusals.append(
                    f"{host.name}: {port.netdev} ({port.rdma_device}) is enslaved to {port.master}: a Linux bond "
                    "the design does not hold as a RoCE LAG; pods given this port's RDMA device would send on one "
                    "cable with the bond's GIDs. Remove the bond (topology rails) before deploying"
                )


def _driver(inputs: K8sInputs, out: Findings, wanted: bool) -> None:
    drivers = host_driver(inputs)
    if wanted and drivers:
        listing = ", ".join(f"{h} ({d})" for h, d in drivers.items())
        out.warnings.append(
            f"--driver-container ignored: {listing} already run an RDMA driver; the DOCA driver container would "
            "unload it and build its own over it (seed 003: an A100 node's NIC then flooded its logs for hours)"
        )
    missing = [h.name for h in inputs.hosts if h.name not in drivers and h.has_facts]
    if missing and not wanted:
        out.warnings.append(
            f"{', '.join(missing)} show no RDMA driver: run the wizard's ofed stage, or pass --driver-container to "
            "let the Network Operator install the DOCA driver container on hosts without one"
        )


def _same_netdev(rail: Rail, out: Findings) -> None:
    if len(rail.netdevs) > 1:
        listing = ", ".join(f"{e.host}: {e.netdev}" for e in rail.ends)
        out.warnings.append(
            f"{rail.name}: the port has different names across hosts ({listing}); a MacvlanNetwork names one master "
            f"netdev, so it uses {rail.ends[0].netdev}. Give the ports one name on every host (systemd .link files) "
            "or split the nodes into one network each"
        )


def _pool_fits(rail: Rail, nodes: int, out: Findings) -> None:
    """A node whose per-node block holds only host addresses gets no pod address on the rail: refused, since its
    pods would fail to start (or start without the rail) long after the export looked fine."""
    refusal = pool_refusal(rail, nodes)
    if refusal:
        out.refusals.append(refusal)
        return
    plan = pool_plan(rail, nodes)
    if plan.subnet is not None and plan.subnet != rail.subnet:
        out.warnings.append(
            f"{rail.name}: pods get addresses in {plan.subnet}, the part of {rail.subnet} where every node's block "
            f"keeps addresses no host or gateway has, in per-node blocks of {plan.block}: nv-ipam {_NV_IPAM} carves "
            f"blocks from the start of the pool subnet, and across all of {rail.subnet} it would hand a node a block "
            "of host addresses only. Pods see the longer prefix; every pod address of the rail is inside it"
        )


def _qos_limits(inputs: K8sInputs, out: Findings) -> None:
    roce = inputs.answers.roce
    if roce.ecn and roce.cnp_dscp != 4:
        out.warnings.append(
            f"NicConfigurationTemplate roceOptimized writes the firmware defaults CNP_DSCP=4/CNP_802P_PRIO=6 and has "
            f"no field for the answers' cnp_dscp {roce.cnp_dscp}/cnp_priority {roce.cnp_priority}: keep the "
            "wizard's roce stage, whose runtime ecn/roce_np settings override them after every boot"
        )


def _ib_checks(inputs: K8sInputs, out: Findings) -> None:
    """Refuse rail ports held by an IPoIB bond; warn where one IPoIBNetwork cannot name every host's port, and where
    the export runs from the answers alone."""
    groups = ib_groups(inputs)
    if not groups:
        return
    for group in groups:
        for host in group.hosts:
            for rail in group.rails:
                end = group.end(rail, host.name)
                port = host.disc.port_by_netdev(end.netdev) if end else None
                if port is not None and port.master:
                    out.refusals.append(
                        f"{host.name}: {port.netdev} ({port.rdma_device}) is enslaved to {port.master}: an IPoIB "
                        "bond (seed 003's A100 nodes: mlx5_bond_0 over bond0, where vLLM then failed) is no port the "
                        "RDMA shared device plugin or an IPoIBNetwork can hand to pods. Remove the bond, or keep "
                        "the port out of the rails (rails[i].netdev)"
                    )
        for rail in group.rails:
            names = sorted({e.netdev for e in rail.ends})
            if len(names) > 1:
                listing = ", ".join(f"{e.host}: {e.netdev}" for e in rail.ends)
                out.warnings.append(
                    f"{rail.name}, group {group.name}: the IPoIB port has different names across hosts ({listing}); "
                    f"an IPoIBNetwork names one parent netdev, so {group.network(rail)} uses {rail.ends[0].netdev}. "
                    "Give the ports one name on every host of the group, or split the group"
                )
    blind = [h.name for g in groups for h in g.hosts if not h.has_facts]
    if blind:
        netdevs = ", ".join(r.netdev or "" for r in inputs.answers.network.rails)
        out.warnings.append(
            f"{', '.join(blind)}: no discovery facts, so the RDMA device plugin selects the answers' rails netdevs "
            f"({netdevs}), the NCCL pods leave NCCL_IB_HCA out (the RDMA device names are unknown), no ib_write_bw "
            "pods are written for their group, and no host driver could be seen (the DOCA driver container stays "
            "out). Run `roce-wizard --answers FILE --only discovery` and export again for exact device names"
        )
