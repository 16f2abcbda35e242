"""nvidia-smi: the summary table, -L, --query-gpu CSV and topo -m (with the current RDMA device names)."""

from __future__ import annotations

import time

from wizard.lab import rdma
from wizard.lab.commands import command
from wizard.lab.profile import GpuSpec
from wizard.lab.streams import CommandFailed, Ctx

NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
    "driver is installed and running."
)
LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def _bus_id(g: GpuSpec) -> str:
    return "0000" + g.pci.upper()


FIELDS = {
    "index": ("index", lambda g, h: str(g.index)),
    "name": ("name", lambda g, h: g.name),
    "uuid": ("uuid", lambda g, h: g.uuid),
    "pci.bus_id": ("pci.bus_id", lambda g, h: _bus_id(g)),
    "memory.total": ("memory.total [MiB]", lambda g, h: f"{g.memory_mib} MiB"),
    "memory.used": ("memory.used [MiB]", lambda g, h: "1 MiB"),
    "memory.free": ("memory.free [MiB]", lambda g, h: f"{g.memory_mib - 1} MiB"),
    "driver_version": ("driver_version", lambda g, h: h.profile.nvidia_driver),
    "temperature.gpu": ("temperature.gpu", lambda g, h: str(31 + g.index % 4)),
    "utilization.gpu": ("utilization.gpu [%]", lambda g, h: "0 %"),
    "persistence_mode": ("persistence_mode", lambda g, h: "Enabled"),
    "compute_cap": ("compute_cap", lambda g, h: g.compute_cap),
    "pcie.link.gen.current": ("pcie.link.gen.current", lambda g, h: "4"),
    "pcie.link.width.current": ("pcie.link.width.current", lambda g, h: "16"),
    "power.draw": ("power.draw [W]", lambda g, h: "35.12 W"),
}


@command("nvidia-smi")
async def nvidia_smi(ctx: Ctx) -> int:
    host = ctx.host
    if "nvidia" not in host.modules:
        raise CommandFailed(NO_DRIVER, 9)
    args = ctx.args
    if args[:1] == ["topo"]:
        if "-m" not in args and "--matrix" not in args:
            raise CommandFailed("topo: missing option; use nvidia-smi topo -m", 2)
        ctx.out.write(topo(ctx))
        return 0
    if "-L" in args or "--list-gpus" in args:
        for g in host.profile.gpus:
            ctx.print(f"GPU {g.index}: {g.name} (UUID: {g.uuid})")
        return 0
    query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
    if query is None and "--query-gpu" in args:
        query = args[args.index("--query-gpu") + 1]
    if query is not None:
        fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), None)
        if fmt is None and "--format" in args:
            fmt = args[args.index("--format") + 1]
        if fmt is None or not fmt.startswith("csv"):
            raise CommandFailed('"--format=" switch is missing. Please try again.', 2)
        return _query(ctx, [f.strip() for f in query.split(",") if f.strip()], fmt.split(","))
    ctx.out.write(summary(ctx))
    return 0


def _query(ctx: Ctx, fields: list[str], fmt: list[str]) -> int:
    for f in fields:
        if f not in FIELDS:
            raise CommandFailed(f'Field "{f}" is not a valid field to query.\n', 2)
    if "noheader" not in fmt:
        ctx.print(", ".join(FIELDS[f][0] for f in fields))
    for g in ctx.host.profile.gpus:
        values = [FIELDS[f][1](g, ctx.host) for f in fields]
        if "nounits" in fmt:
            values = [v.removesuffix(" MiB").removesuffix(" %").removesuffix(" W") for v in values]
        ctx.print(", ".join(values))
    return 0


def summary(ctx: Ctx) -> str:
    p = ctx.host.profile
    bar = "+-----------------------------------------+------------------------+----------------------+"
    lines = [
        time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime()) + "       ",
        "+-----------------------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {p.nvidia_driver}             Driver Version: {p.nvidia_driver}     CUDA Version: 12.4     |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for g in p.gpus:
        lines += [
            f"| {g.index:>3}  {g.name:<26}     On  |   {_bus_id(g)[4:]:<16} Off |                    0 |",
            f"| N/A   {31 + g.index % 4}C    P8             35W / {g.power_cap_w:>4}W |"
            f"       1MiB / {g.memory_mib:>6}MiB |"
            "      0%      Default |",
            "|                                         |                        |                  N/A |",
            bar,
        ]
    lines += [
        "",
        "+-----------------------------------------------------------------------------------------+",
        "| Processes:                                                                              |",
        "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
        "|  No running processes found                                                             |",
        "+-----------------------------------------------------------------------------------------+",
    ]
    return "\n".join(lines) + "\n"


def topo(ctx: Ctx) -> str:
    host = ctx.host
    gpus = list(host.profile.gpus)
    nics = rdma.devices(host)
    items: list[tuple[str, int, str, str]] = []  # (label, numa, switch, card)
    nvlinks = host.profile.nvlinks
    for g in gpus:
        items.append((f"GPU{g.index}", g.numa_node, g.pcie_switch, ""))
    for i, d in enumerate(nics):
        items.append((f"NIC{i}", d.card.numa_node, d.card.pcie_switch, d.card.label))

    def rel(a: tuple[str, int, str, str], b: tuple[str, int, str, str]) -> str:
        if a is b:
            return " X "
        if nvlinks and a[0].startswith("GPU") and b[0].startswith("GPU"):
            return f"NV{nvlinks}"  # HGX/SXM boards: every GPU pair joined through NVSwitch
        if a[3] and a[3] == b[3]:
            return "PIX"
        if a[2] == b[2]:
            return "PIX" if host.profile.gpu_nic_pix else "PXB"
        return "NODE" if a[1] == b[1] else "SYS"

    head = "\t" + "\t".join(x[0] for x in items) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = [head]
    for a in items:
        cells = [rel(a, b) for b in items]
        if a[0].startswith("GPU"):
            rows.append(f"{a[0]}\t" + "\t".join(cells) + f"\t{host.profile.cpus_of(a[1])}\t{a[1]}\t\tN/A")
        else:
            rows.append(f"{a[0]}\t" + "\t".join(cells))
    text = "\n".join(rows) + "\n" + LEGEND
    if nics:
        text += "\nNIC Legend:\n\n" + "".join(f"  NIC{i}: {d.name}\n" for i, d in enumerate(nics))
    return text
