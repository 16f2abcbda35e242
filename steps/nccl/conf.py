"""/etc/nccl.conf for one host: which HCAs, which bootstrap interface, GID index or not, and what must go."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from steps.discovery.facts import DiscoveryFacts
from steps.nccl.facts import NcclFacts, RdmaPortState, version_tuple

# NCCL 2.21 picks the RoCE v2 IPv4 GID itself; NVIDIA: NCCL_IB_GID_INDEX "should not be set" from then on.
GID_AUTO_SINCE = (2, 21, 0)
# Keys this stage owns: their old values are replaced, never kept.
MANAGED = ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_CROSS_NIC", "NCCL_IB_TC", "NCCL_IB_GID_INDEX", "NCCL_DEBUG",
           "NCCL_IB_SL")  # fmt: skip
_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")


@dataclass
class ConfEntry:
    """One KEY=VALUE line of an existing file, with what was wrong with its form."""

    key: str
    value: str
    problems: list[str] = field(default_factory=list)


def parse_conf(text: str | None) -> list[ConfEntry]:
    """Read a conf the way NCCL does (``#`` in column 0 is a comment, lines without ``=`` are ignored),
    but tolerate the seed's shell forms (``export``, quotes) so they can be fixed instead of copied."""
    entries: list[ConfEntry] = []
    for raw in (text or "").splitlines():
        line = raw.rstrip("\r")
        if line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        problems = []
        if key.strip().startswith("export "):
            problems.append("'export' is shell syntax: NCCL would read the key as 'export NCCL_...'")
            key = key.strip()[len("export ") :]
        if key != key.strip():
            problems.append("spaces around the key become part of it")
        key = key.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            problems.append("NCCL keeps quotes as part of the value")
            value = value[1:-1]
        if _KEY.match(key):
            entries.append(ConfEntry(key, value.strip(), problems))
    return entries


def _is_int(value: str) -> bool:
    return re.fullmatch(r"-?\d+", value.strip()) is not None


def rejection(key: str, value: str, nccl_version: str | None, ib: bool = False) -> str | None:
    """Why a setting must not stay in nccl.conf (roce-correctness.md items 27-40), or None to keep it. On an
    InfiniBand fabric the RoCE-only objections (GID index, SL, CollNet) do not apply."""
    v = value.strip()
    if ib and key in ("NCCL_IB_SL", "NCCL_ALGO", "NCCL_COLLNET_ENABLE"):
        return None
    if ib and key == "NCCL_IB_GID_INDEX":
        return f"{key}={v}: InfiniBand addresses by LID; a GID index only matters on RoCE (or routed IB)"
    if key == "NCCL_IB_RETRY_CNT" and (not _is_int(v) or not 0 <= int(v) <= 7):
        return f"{key}={v}: valid values are 0-7 (a 3-bit IB field); the default 7 is already the maximum"
    if key == "NCCL_IB_CUDA_SUPPORT":
        return f"{key}: removed in NCCL 2.4.0 and ignored; GPUDirect RDMA is on by default where the topology allows"
    if key in ("NCCL_NET_GDR_LEVEL", "NCCL_IB_GDR_LEVEL", "NCCL_P2P_LEVEL") and _is_int(v):
        return (
            f"{key}={v}: integer levels are legacy and >4 means SYS, forcing the path across the CPU "
            "interconnect; leave it unset (default PXB) unless nvidia-smi topo -m says otherwise"
        )
    if key == "NCCL_MIN_NCHANNELS":
        return f"{key}: deprecated since NCCL 2.17 (NCCL_MIN_CTAS replaced it); the default is right"
    if key == "NCCL_NSOCKS_PERTHREAD":
        return f"{key}: tunes only the TCP socket transport; it would only hide an RDMA failure"
    if key == "NCCL_BUFFSIZE" and v == "4194304":
        return f"{key}={v}: equals the 4 MiB default"
    if key == "NCCL_ALGO" and "collnet" in v.lower().replace("_", ""):
        return (
            f"{key}={v}: CollNet needs SHARP-capable InfiniBand switches and a plugin; since NCCL 2.24 an "
            "unknown token fails every job (the token is CollNetChain, not COLLNET_CHAIN)"
        )
    if key == "NCCL_COLLNET_ENABLE" and v not in ("0", ""):
        return f"{key}={v}: CollNet needs SHARP-capable InfiniBand switches; impossible on RoCE rails"
    if key == "NCCL_IB_DISABLE" and v not in ("0", ""):
        return f"{key}={v}: turns RDMA off, NCCL would run over TCP sockets"
    if key == "NCCL_NET" and v.lower() == "socket":
        return f"{key}={v}: forces TCP sockets instead of RDMA"
    if key == "NCCL_DEBUG_SUBSYS":
        return f"{key}={v}: a debugging variable; validation runs set it on their command line"
    if key == "NCCL_IB_SL":
        return f"{key}={v}: no effect with DSCP trust on untagged RoCE links (the priority comes from NCCL_IB_TC)"
    if key == "NCCL_DEBUG" and v.upper() in ("INFO", "TRACE"):
        return f"{key}={v}: kept permanently it floods every job's output; production uses WARN"
    if key == "NCCL_IB_GID_INDEX" and not needs_gid_index(nccl_version):
        return f"{key}={v}: NCCL >= 2.21 selects the RoCE v2 IPv4 GID itself and NVIDIA says not to set it"
    return None


def needs_gid_index(nccl_version: str | None) -> bool:
    """NCCL older than 2.21 needs NCCL_IB_GID_INDEX on RoCE; an unknown version is assumed current."""
    parsed = version_tuple(nccl_version)
    return parsed is not None and parsed < GID_AUTO_SINCE


@dataclass
class HcaChoice:
    """Which RDMA ports go into NCCL_IB_HCA and why the others do not."""

    chosen: list[RdmaPortState] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "mlx5_4:1 (reason)"
    soft_roce: bool = False  # chosen devices are rxe (no GPUDirect RDMA possible)


def choose_hcas(nccl: NcclFacts, disc: DiscoveryFacts, link_layer: str = "ethernet") -> HcaChoice:
    """ACTIVE ports of the fabric's link layer: RoCE ports with a RoCE v2 IPv4 GID, or InfiniBand ports (addressed
    by LID: no GID needed); the other link layer, down, address-less and management ports skipped."""
    choice = HcaChoice()
    connectx = {p.netdev for p in disc.ports if p.netdev}
    bond_masters = set(nccl.bonds)  # now, not at discovery time: the network stage may have built them since
    hardware, soft = [], []
    for port in _rail_order(nccl.rdma, disc):
        why = None
        layer = port.link_layer or "Ethernet"
        if layer == "InfiniBand" and link_layer == "ethernet":
            why = "InfiniBand port: fabric.link_layer is ethernet (RoCE)"
        elif layer != "InfiniBand" and link_layer == "infiniband":
            why = f"{layer} port: fabric.link_layer is infiniband"
        elif port.state != "ACTIVE":
            why = f"state {port.state} ({port.physical_state or '?'}): no link; check the cable and the peer port"
            if port.state == "INIT":
                why = "state INIT: no subnet manager has swept the port (see discovery's subnet manager item)"
        elif layer == "Ethernet" and not port.roce_v2_ipv4_gids:
            why = f"{port.netdev or 'its netdev'} has no IPv4 address, hence no RoCE v2 IPv4 GID (stage network)"
        if why:
            choice.skipped.append(f"{port.name} ({why})")
            continue
        is_soft = port.device.startswith(("rxe", "siw")) or (
            port.netdev not in connectx and port.netdev not in bond_masters
        )
        (soft if is_soft else hardware).append(port)
    management = [p for p in hardware if disc.ssh_interface and p.netdev == disc.ssh_interface]
    if management and len(hardware) > len(management):
        for port in management:
            hardware.remove(port)
            choice.skipped.append(f"{port.name} ({port.netdev} carries the SSH session: management, not a rail)")
    if hardware:
        choice.chosen = hardware
        choice.skipped += [f"{p.name} (Soft-RoCE on {p.netdev}: hardware RoCE ports exist)" for p in soft]
    else:
        choice.chosen, choice.soft_roce = soft, bool(soft)
    return choice


def _rail_order(ports: list[RdmaPortState], disc: DiscoveryFacts) -> list[RdmaPortState]:
    """Physical ports in PCI order (the rail order), then LAG and other devices by name."""
    pci = {p.netdev: p.pci for p in disc.ports if p.netdev}
    return sorted(ports, key=lambda p: (p.netdev not in pci, pci.get(p.netdev, ""), p.device, p.port))


def gid_index(chosen: list[RdmaPortState]) -> tuple[int | None, str | None]:
    """The RoCE v2 IPv4 GID index shared by every chosen HCA, or a problem naming the HCAs that differ."""
    firsts = {p.name: p.roce_v2_ipv4_gids[0] for p in chosen if p.roce_v2_ipv4_gids}
    values = set(firsts.values())
    if len(values) == 1 and len(firsts) == len(chosen):
        return values.pop(), None
    listing = ", ".join(f"{name} -> {index}" for name, index in firsts.items())
    return None, f"the RoCE v2 IPv4 GID index differs between HCAs ({listing}); one NCCL_IB_GID_INDEX cannot fit all"


def render_conf(
    *,
    host: str,
    conf_path: str,
    hcas: list[str],
    socket_ifname: str,
    tos: int,
    gid: int | None,
    nccl_version: str | None,
    kept: list[ConfEntry],
    ib: bool = False,
    ib_sl: int | None = None,
) -> str:
    """The file content: NCCL's own format, ``#`` comments in column 0, no export, no quotes, no inline comments."""
    dscp, prio = tos >> 2, tos >> 5  # the default dscp2prio map puts DSCP d on priority d >> 3 (roce.priority)
    which = (
        "InfiniBand ports that are ACTIVE (addressed by LID: no GID index)"
        if ib
        else "RoCE ports that are ACTIVE with a RoCE v2 IPv4 GID"
    )
    lines = [
        f"# {conf_path} for {host}, written by roce-wizard from this host's discovered RDMA ports.",
        "# NCCL reads these KEY=VALUE lines itself (shell syntax does not apply); a job's environment variables win.",
        f"# {which}, exact names ('=' prefix), one rail each.",
        f"NCCL_IB_HCA=={','.join(hcas)}",
        "# Bootstrap and out-of-band TCP traffic: the management interface (exact name).",
        f"NCCL_SOCKET_IFNAME=={socket_ifname}",
        "# Rails are cabled port to port: a ring must use the same rail on every host.",
        "NCCL_CROSS_NIC=0",
    ]
    if ib:
        # IB is lossless by credit flow control: no traffic class to pick; the SL selects a virtual lane through
        # the subnet manager's SL2VL table.
        if ib_sl is not None:
            lines += [
                "# Service level = fabric.ib_sl: the SM's SL-to-VL table maps it to a lane.",
                f"NCCL_IB_SL={ib_sl}",
            ]
    else:
        lines += [
            f"# Traffic class = roce.tos {tos}: DSCP {dscp}, lossless priority {prio} (PFC) with the default DSCP map.",
            f"NCCL_IB_TC={tos}",
        ]
    if gid is not None:
        lines += [
            f"# NCCL {nccl_version} predates 2.21 and cannot pick the GID: RoCE v2 IPv4 entry, same on every HCA.",
            f"NCCL_IB_GID_INDEX={gid}",
        ]
    lines += [
        "# Errors only; validation runs raise the level to INFO on their own command line.",
        "NCCL_DEBUG=WARN",
    ]
    if kept:
        lines.append("# Kept from the previous file:")
        lines += [f"{entry.key}={entry.value}" for entry in kept]
    return "\n".join(lines) + "\n"


def split_existing(text: str | None, nccl_version: str | None, ib: bool = False) -> tuple[list[ConfEntry], list[str]]:
    """Entries of the old file to keep (unmanaged, acceptable) and why the others go."""
    kept: list[ConfEntry] = []
    dropped: list[str] = []
    seen: set[str] = set()
    for entry in parse_conf(text):
        reason = rejection(entry.key, entry.value, nccl_version, ib)
        if reason:
            dropped.append(reason)
        elif entry.key not in MANAGED and entry.key not in seen:
            kept.append(entry)
            seen.add(entry.key)
            dropped += [f"{entry.key}: {p}; rewritten as {entry.key}={entry.value}" for p in entry.problems]
    return kept, dropped
