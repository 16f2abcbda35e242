"""Evidence that GPUDirect RDMA is usable: GPU<->NIC paths, a CUDA perftest pair, and NCCL's own log lines."""

from __future__ import annotations

from typing import Any

from steps.gpudirect.facts import GDR_DEFAULT_PATHS, GpuPath
from wizard.engine.step import CheckItem
from wizard.parsers.nccl import NcclDebug


def path_check(paths: list[GpuPath]) -> CheckItem:
    """Which GPUs NCCL will use GPUDirect RDMA for by default (GPU and NIC behind one PCIe switch: PIX/PXB)."""
    if not paths:
        return CheckItem(
            id="gpu_nic_paths",
            title="GPU <-> NIC PCIe paths",
            status="warn",
            evidence="nvidia-smi topo -m listed no RDMA NIC next to the GPUs",
            fix="check nvidia-smi topo -m; without a NIC column NCCL cannot place GPUDirect traffic",
        )
    near = [p for p in paths if p.path in GDR_DEFAULT_PATHS]
    far = [p for p in paths if p.path not in GDR_DEFAULT_PATHS]
    evidence = "; ".join(f"GPU{p.gpu} -> {'/'.join(p.nics)} {p.path}" for p in paths)
    if not far:
        return CheckItem(
            id="gpu_nic_paths",
            title="GPU <-> NIC PCIe paths",
            status="pass",
            evidence=f"every GPU shares a PCIe switch with a NIC (NCCL uses GPUDirect by default): {evidence}",
        )
    return CheckItem(
        id="gpu_nic_paths",
        title="GPU <-> NIC PCIe paths",
        status="warn",
        evidence=(
            (
                f"NCCL uses GPUDirect RDMA by default only for GPU {', '.join(str(p.gpu) for p in near)} (PIX/PXB); "
                if near
                else "NCCL uses GPUDirect RDMA by default for no GPU (none shares a PCIe switch with a NIC); "
            )
            + f"GPU {', '.join(str(p.gpu) for p in far)} reach their nearest NIC via "
            f"{'/'.join(sorted({p.path for p in far}))}, so their network traffic is staged through host memory "
            f"(or relayed by a closer GPU with PXN): {evidence}"
        ),
        fix=(
            "expected on servers with fewer NICs than PCIe switches; NCCL_NET_GDR_LEVEL=SYS forces GPUDirect across "
            "the CPU, which is usually slower - measure before changing it"
        ),
    )


def perftest_check(result: dict[str, Any] | None, mode: str) -> CheckItem:
    """The verdict on the cross-host ``ib_write_bw --use_cuda`` pair recorded by cluster_probe."""
    title = "GPU memory <-> GPU memory RDMA across hosts (ib_write_bw --use_cuda)"
    if not result:
        return CheckItem(id="gdr_perftest", title=title, status="skip", evidence="not run (single host or no rail)")
    if result.get("skipped"):
        return CheckItem(id="gdr_perftest", title=title, status="skip", evidence=str(result["skipped"]))
    where = (
        f"{result.get('device')} GPU{result.get('gpu')} <-> {result.get('peer')} {result.get('peer_device')} "
        f"GPU{result.get('peer_gpu')}"
    )
    if result.get("error"):
        return CheckItem(
            id="gdr_perftest",
            title=title,
            status="fail",
            evidence=f"{where}: {result['error']}",
            fix=(
                "GPU memory cannot be registered with the NIC: check nvidia_peermem is loaded (lsmod) or, for "
                "DMA-BUF, that the open GPU kernel modules are in use (modinfo -F license nvidia)"
                if mode == "peermem" or "dmabuf" not in str(result.get("command", ""))
                else "check the open GPU kernel modules are in use (modinfo -F license nvidia) and the kernel >= 5.12"
            ),
        )
    gbps = result.get("gbps")
    return CheckItem(
        id="gdr_perftest",
        title=title,
        status="pass",
        evidence=f"{where}: {gbps} Gb/s average with {result.get('flags')}",
    )


def nccl_gdr_check(debug: NcclDebug) -> CheckItem:
    """The definitive proof, for stage nccl: did NCCL itself use GPUDirect RDMA (NCCL_DEBUG=INFO log)?

    Pass: "GPU Direct RDMA Enabled for HCA" or channels "via NET/IB/N/GDRDMA". Fail: "Disabled", or inter-node
    traffic over sockets. Warn: the log says neither (NCCL_DEBUG below INFO, or no inter-node channel).
    """
    title = "NCCL uses GPUDirect RDMA"
    gdr_channels = sorted({c.via for c in debug.channels if "GDRDMA" in c.via})
    if debug.socket_fallback:
        return CheckItem(
            id="nccl_gdr",
            title=title,
            status="fail",
            evidence="NCCL sends inter-node traffic over TCP sockets (NET/Socket): no RDMA at all",
            fix="check NCCL_IB_HCA names the RDMA devices and NCCL_IB_DISABLE is not set",
        )
    if debug.gdr_enabled:
        how = "DMA-BUF" if debug.dmabuf else "nvidia-peermem"
        hcas = ", ".join(debug.gdr_enabled_hcas) or "-"
        via = ", ".join(gdr_channels) or "no channel lines"
        return CheckItem(id="nccl_gdr", title=title, status="pass",
                         evidence=f"GPU Direct RDMA enabled for HCA {hcas} ({how}); channels via {via}")  # fmt: skip
    if debug.gdr_disabled:
        return CheckItem(
            id="nccl_gdr",
            title=title,
            status="fail",
            evidence=f"GPU Direct RDMA Disabled for HCA {', '.join(debug.gdr_disabled_hcas)}",
            fix="stage gpudirect: nvidia-peermem (DOCA-OFED) or DMA-BUF (open GPU kernel modules, kernel >= 5.12)",
        )
    return CheckItem(
        id="nccl_gdr",
        title=title,
        status="warn",
        evidence="the NCCL log has no GPU Direct RDMA line and no GDRDMA channel",
        fix="run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET across at least two hosts",
    )
