"""RDMA test pods across two nodes: an ib_write_bw server/client pair on every rail and an NCCL all_reduce pair,
each requesting the rails' RDMA resources, the rails' networks and IPC_LOCK."""

from __future__ import annotations

from typing import Any

from wizard.export.k8s_checks import NFD_LABEL
from wizard.export.k8s_inputs import K8sInputs
from wizard.export.k8s_objects import NETWORK_NAMESPACE, RESOURCE_PREFIX

SUBDOMAIN = "rdma-test"
SCRIPTS = "rdma-test-scripts"
PERFTEST_BASE_PORT = 18515
PERFTEST_IMAGE = "mellanox/rping-test"
NCCL_IMAGE = "nvcr.io/nvidia/pytorch:24.12-py3"
NCCL_PORT = 29500
SHM_SIZE = "16Gi"  # NVIDIA's container guides run NCCL with --shm-size of gigabytes; 8 ranks need more than 64 MiB
Obj = dict[str, Any]


def script(name: str) -> str:
    """A test script shipped in assets/k8s/ (mounted into the test pods from a ConfigMap)."""
    from wizard.paths import assets_dir

    return (assets_dir() / "k8s" / name).read_text()


def scripts_config_map() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SCRIPTS, "namespace": NETWORK_NAMESPACE},
        "data": {"ib_write_bw.sh": script("ib_write_bw.sh"), "allreduce.py": script("allreduce.py")},
    }


def headless_service() -> Obj:
    """DNS names (server.rdma-test, nccl-0.rdma-test) for the TCP side channel perftest and NCCL bootstrap use; the
    data itself moves over the rails' RDMA devices."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SUBDOMAIN, "namespace": NETWORK_NAMESPACE},
        "spec": {"clusterIP": "None", "selector": {"app": SUBDOMAIN}, "publishNotReadyAddresses": True},
    }


def _rail_resources(inputs: K8sInputs) -> dict[str, int]:
    return {f"{RESOURCE_PREFIX}/{rail.resource}": 1 for rail in inputs.rails}


def _annotation(inputs: K8sInputs) -> str:
    # Multus names the interfaces net1, net2, ... in this order; the scripts rely on it.
    return ",".join(f"{NETWORK_NAMESPACE}/{rail.name}" for rail in inputs.rails)


def _pod(
    name: str, host: str, container: Obj, inputs: K8sInputs, extra: dict[str, int] | None = None, shm: bool = False
) -> Obj:
    return pod(name, host, container, {**_rail_resources(inputs), **(extra or {})}, _annotation(inputs), shm=shm)


def pod(name: str, host: str, container: Obj, wanted: dict[str, int], networks: str, *, shm: bool = False) -> Obj:
    """A test pod on ``host`` asking for the RDMA (and GPU) resources ``wanted`` and attached to ``networks``."""
    mounts = [{"name": "scripts", "mountPath": "/scripts"}]
    volumes: list[Obj] = [{"name": "scripts", "configMap": {"name": SCRIPTS, "defaultMode": 0o755}}]
    if shm:
        # NCCL's ranks in one pod talk through /dev/shm; a container's default 64 MiB is too small for 8 GPUs (NCCL
        # troubleshooting: "failed to extend /dev/shm"). A memory-backed emptyDir counts as the pod's memory.
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}})
    container = {
        **container,
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        # No memory limit: RDMA pins (locks) memory, and a limit makes ibv_reg_mr fail ("Couldn't allocate MR").
        "resources": {"requests": dict(wanted), "limits": dict(wanted)},
        "volumeMounts": mounts,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NETWORK_NAMESPACE,
            "labels": {"app": SUBDOMAIN},
            "annotations": {"k8s.v1.cni.cncf.io/networks": networks},
        },
        "spec": {
            "hostname": name,
            "subdomain": SUBDOMAIN,
            "restartPolicy": "Never",
            "nodeSelector": {"kubernetes.io/hostname": host, NFD_LABEL: "true"},
            "containers": [container],
            "volumes": volumes,
        },
    }


def _rail_args(inputs: K8sInputs, host: str) -> list[str]:
    """DEVICE:IFNAME:PORT per rail as the script takes them; the device name is the one discovery found on that
    host (inbox rdma-core names it rocep<bus>s<slot>f<fn>, so it is never guessed)."""
    args = []
    for n, rail in enumerate(inputs.rails):
        end = next(e for e in rail.ends if e.host == host)
        args.append(f"{end.rdma_device}:net{n + 1}:{PERFTEST_BASE_PORT + n}")
    return args


def pair_hosts(inputs: K8sInputs) -> tuple[str, str] | None:
    """The first two hosts that carry every rail (the test pods need both ends of each)."""
    full = [h.name for h in inputs.hosts if all(any(e.host == h.name for e in r.ends) for r in inputs.rails)]
    return (full[0], full[1]) if len(full) >= 2 else None


def perftest_pods(inputs: K8sInputs, pair: tuple[str, str]) -> list[Obj]:
    tclass = str(inputs.answers.roce.tos)
    pods = []
    for role, host, peer in (("server", pair[0], "-"), ("client", pair[1], f"server.{SUBDOMAIN}")):
        container = {
            "name": "ib-write-bw",
            "image": PERFTEST_IMAGE,
            "command": ["/scripts/ib_write_bw.sh", role, peer, *_rail_args(inputs, host)],
            "env": [{"name": "TCLASS", "value": tclass}],
        }
        pods.append(_pod(role, host, container, inputs))
    return pods


def nccl_pods(inputs: K8sInputs, pair: tuple[str, str]) -> list[Obj]:
    gpus = {h.name: len(h.disc.gpus) for h in inputs.hosts}
    per_node = max(1, min(gpus[pair[0]], gpus[pair[1]]))
    pods = []
    for rank, host in enumerate(pair):
        devices = [next(e for e in r.ends if e.host == host).rdma_device or "" for r in inputs.rails]
        env = {
            "NCCL_IB_HCA": "=" + ",".join(devices),  # "=": exactly these devices, no prefix matches
            "NCCL_IB_TC": str(inputs.answers.roce.tos),
            "NCCL_CROSS_NIC": "0",  # rail i only reaches rail i (roce-correctness.md §0)
            "NCCL_SOCKET_IFNAME": "eth0",  # bootstrap over the cluster network
            "NCCL_DEBUG": "INFO",
            "MIN_BUSBW_GBYTES": str(inputs.answers.nccl.min_busbw_gbytes),
        }
        container = {
            "name": "nccl",
            "image": NCCL_IMAGE,
            "command": [
                "torchrun",
                "--nnodes=2",
                f"--nproc-per-node={per_node}",
                f"--node-rank={rank}",
                f"--master-addr=nccl-0.{SUBDOMAIN}",
                f"--master-port={NCCL_PORT}",
                "/scripts/allreduce.py",
            ],
            "env": [{"name": k, "value": v} for k, v in env.items()],
        }
        pods.append(_pod(f"nccl-{rank}", host, container, inputs, {"nvidia.com/gpu": per_node}, shm=True))
    return pods
