"""Test pods of an InfiniBand node group: an ib_write_bw pair on every rail and an NCCL all_reduce pair, on two hosts
of the group, asking for the group's RDMA resource and attached to the group's IPoIB networks.

InfiniBand addresses queue pairs by the LIDs the subnet manager assigns, not by GIDs derived from IP addresses, so
neither perftest nor NCCL is given a GID index, and there is no traffic class to set (NCCL_IB_TC is RoCE's DSCP);
the service level (NCCL_IB_SL, perftest --sl) only where the answers set fabric.ib_sl."""

from __future__ import annotations

from typing import Any

from wizard.export.k8s_groups import IbGroup, k8s_name
from wizard.export.k8s_inputs import K8sInputs
from wizard.export.k8s_objects import NETWORK_NAMESPACE, RESOURCE_PREFIX
from wizard.export.k8s_pods import NCCL_IMAGE, NCCL_PORT, PERFTEST_BASE_PORT, PERFTEST_IMAGE, SUBDOMAIN, pod

Obj = dict[str, Any]
# The RoCE script (assets/k8s/ib_write_bw.sh) looks up the RoCE v2 GID of the pod's address; over InfiniBand there
# is none to look up, so the group pods run assets/k8s/ib_write_bw_ib.sh from the same ConfigMap.
SCRIPT_NAME = "ib_write_bw_ib.sh"


def pair(group: IbGroup) -> tuple[str, str] | None:
    """The first two hosts of the group that have a port on every one of the group's rails."""
    full = [h.name for h in group.hosts if all(group.end(r, h.name) for r in group.rails)]
    return (full[0], full[1]) if len(full) >= 2 else None


def devices_known(group: IbGroup, hosts: tuple[str, str]) -> bool:
    return all((end := group.end(r, h)) is not None and end.rdma_device for r in group.rails for h in hosts)


def _group_pod(group: IbGroup, name: str, host: str, container: Obj, gpus: int = 0) -> Obj:
    wanted = {f"{RESOURCE_PREFIX}/{group.resource}": 1, **({"nvidia.com/gpu": gpus} if gpus else {})}
    networks = ",".join(f"{NETWORK_NAMESPACE}/{group.network(r)}" for r in group.rails)  # net1, net2, ... in order
    out = pod(name, host, container, wanted, networks, shm=bool(gpus))
    out["metadata"]["labels"]["rdma-group"] = k8s_name(group.name)
    return out


def _sl_env(inputs: K8sInputs, name: str) -> list[Obj]:
    sl = inputs.answers.fabric.ib_sl
    return [] if sl is None else [{"name": name, "value": str(sl)}]


def perftest_pods(inputs: K8sInputs, group: IbGroup, hosts: tuple[str, str]) -> list[Obj]:
    """ib_write_bw server and client; only where discovery named every RDMA device (never guessed)."""
    if not devices_known(group, hosts):
        return []
    tag = k8s_name(group.name)
    pods = []
    for role, host, peer in (("server", hosts[0], "-"), ("client", hosts[1], f"server-{tag}.{SUBDOMAIN}")):
        specs = []
        for n, rail in enumerate(group.rails):
            end = group.end(rail, host)
            assert end is not None
            specs.append(f"{end.rdma_device}:{end.rdma_port}:{PERFTEST_BASE_PORT + n}")
        container = {
            "name": "ib-write-bw",
            "image": PERFTEST_IMAGE,
            "command": [f"/scripts/{SCRIPT_NAME}", role, peer, *specs],
        }
        if inputs.answers.fabric.ib_sl is not None:
            container["env"] = _sl_env(inputs, "IB_SL")
        pods.append(_group_pod(group, f"{role}-{tag}", host, container))
    return pods


def _gpus(inputs: K8sInputs, group: IbGroup, hosts: tuple[str, str]) -> int:
    counts = [len(h.disc.gpus) for h in group.hosts if h.name in hosts and h.has_facts]
    if len(counts) == 2:
        return max(1, min(counts))
    return inputs.answers.discovery.expect_gpus or 1


def nccl_pods(inputs: K8sInputs, group: IbGroup, hosts: tuple[str, str]) -> list[Obj]:
    tag = k8s_name(group.name)
    per_node = _gpus(inputs, group, hosts)
    pods = []
    for rank, host in enumerate(hosts):
        env = {}
        if devices_known(group, hosts):
            ends = [group.end(r, host) for r in group.rails]
            # "=": exactly these devices and ports, no prefix matches (mlx5_1 would also match mlx5_10).
            env["NCCL_IB_HCA"] = "=" + ",".join(f"{e.rdma_device}:{e.rdma_port}" for e in ends if e)
        env.update({e["name"]: e["value"] for e in _sl_env(inputs, "NCCL_IB_SL")})
        env["NCCL_CROSS_NIC"] = "0"  # rail i talks to rail i, as the hosts' own NCCL settings
        env["NCCL_SOCKET_IFNAME"] = "eth0"  # bootstrap over the cluster network
        env["NCCL_DEBUG"] = "INFO"
        env["MIN_BUSBW_GBYTES"] = str(inputs.answers.nccl.min_busbw_gbytes)
        container = {
            "name": "nccl",
            "image": NCCL_IMAGE,
            "command": [
                "torchrun",
                "--nnodes=2",
                f"--nproc-per-node={per_node}",
                f"--node-rank={rank}",
                f"--master-addr=nccl-{tag}-0.{SUBDOMAIN}",
                f"--master-port={NCCL_PORT}",
                "/scripts/allreduce.py",
            ],
            "env": [{"name": k, "value": v} for k, v in env.items()],
        }
        pods.append(_group_pod(group, f"nccl-{tag}-{rank}", host, container, gpus=per_node))
    return pods
