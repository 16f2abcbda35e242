"""What the export writes for InfiniBand node groups beside the RoCE files: the groups' test pods, and the README
and Helm values text that says which groups, resources and networks were made."""

from __future__ import annotations

from typing import Any

from wizard.export import k8s_ib_pods as ib_pods
from wizard.export.k8s_groups import IbGroup
from wizard.export.k8s_inputs import K8sInputs
from wizard.export.k8s_objects import RESOURCE_PREFIX

Obj = dict[str, Any]
# Why the NicClusterPolicy has no ofedDriver where hosts run their own stack (seed 003's incident, in one line).
DRIVER_WHY = (
    "a containerised driver over a host driver reloads mlx5_core under the running host stack; seed 003 lost a node "
    "for hours to it"
)


def group_test_pods(inputs: K8sInputs, groups: list[IbGroup]) -> tuple[list[Obj], list[Obj], list[str], list[str]]:
    """Per group: (ib_write_bw pods, NCCL pods, a header line for each file)."""
    perftest: list[Obj] = []
    nccl: list[Obj] = []
    perf_lines: list[str] = []
    nccl_lines: list[str] = []
    for group in groups:
        hosts = ib_pods.pair(group)
        if hosts is None:
            continue
        perf = ib_pods.perftest_pods(inputs, group, hosts)
        if perf:
            perftest.extend(perf)
            client = perf[1]["metadata"]["name"]
            perf_lines.append(
                f"Group {group.name} (InfiniBand): ib_write_bw on every rail, server on {hosts[0]}, client on "
                f"{hosts[1]} (kubectl logs {client})."
            )
        pair = ib_pods.nccl_pods(inputs, group, hosts)
        nccl.extend(pair)
        nccl_lines.append(
            f"Group {group.name} (InfiniBand): NCCL all_reduce across {hosts[0]} and {hosts[1]} "
            f"(kubectl logs {pair[0]['metadata']['name']})."
        )
    return perftest, nccl, perf_lines, nccl_lines


def summary(groups: list[IbGroup]) -> list[str]:
    """One line per group: its hosts, resource, networks (with their parent netdev and subnet) and devices."""
    lines = []
    for group in groups:
        networks = ", ".join(
            f"`{group.network(r)}` (IPoIBNetwork on {r.ends[0].netdev}, pool `{r.name}` {r.subnet})"
            for r in group.rails
        )
        devices = "; ".join(
            f"{h.name} "
            + ", ".join(
                f"{e.netdev} ({e.rdma_device or 'device unknown'})" for r in group.rails if (e := group.end(r, h.name))
            )
            for h in group.hosts
        )
        hosts = ", ".join(h.name for h in group.hosts)
        lines.append(
            f"- `{group.name}`: resource `{RESOURCE_PREFIX}/{group.resource}` on {hosts}; networks {networks}; "
            f"ports {devices}"
        )
    return lines


def readme_sections(inputs: K8sInputs, groups: list[IbGroup]) -> str:
    """The README's InfiniBand part: the groups made, and what InfiniBand pods need and do not need."""
    if not groups:
        return ""
    sl = inputs.answers.fabric.ib_sl
    service = f"NCCL_IB_SL={sl} and perftest --sl={sl} (fabric.ib_sl)" if sl is not None else "no service level"
    return (
        "\n## InfiniBand node groups\n"
        + "\n".join(summary(groups))
        + "\n\nEach group has one RDMA shared device plugin resource (selectors: the group's IPoIB netdevs, link type\n"
        "infiniband) and one IPoIBNetwork per rail; its test pods ask for that resource only, so the scheduler keeps\n"
        "them on the group's nodes. InfiniBand needs no DSCP, PFC or ECN (its links are lossless by credit flow\n"
        "control) and no NicConfigurationTemplate; queue pairs are addressed by LID, so the pods set no\n"
        f"NCCL_IB_GID_INDEX and no NCCL_IB_TC, and {service}. A subnet manager must run on the fabric.\n"
        "Pods keep IPC_LOCK and set no memory limit: RDMA pins memory, and a limit makes ib_write_bw fail with\n"
        '"Couldn\'t allocate MR" (seed 003).\n'
    )


def helm_comments(groups: list[IbGroup]) -> str:
    """Comment lines for helm-values.yaml naming the groups; the values themselves are the RoCE export's."""
    if not groups:
        return ""
    lines = [
        "# InfiniBand node groups in this export (resources in 10-nic-cluster-policy.yaml, whose secondaryNetwork",
        "# runs the IPoIB CNI; IPoIBNetworks in 30-rail-networks.yaml):",
    ]
    for group in groups:
        nets = ", ".join(group.network(r) for r in group.rails)
        lines.append(f"#   {group.name}: {RESOURCE_PREFIX}/{group.resource}, networks {nets}")
    return "\n".join(lines) + "\n"
