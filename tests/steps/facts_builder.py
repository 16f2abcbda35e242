"""Synthetic discovery facts for stage tests: the reference server (two dual-port ConnectX-4 Lx) and variations."""

from __future__ import annotations

from typing import Any

from steps.discovery.facts import DiscoveryFacts, Gid, NicPort
from wizard.answers.model import Answers, parse_answers
from wizard.engine.step import ClusterView

# (pci, netdev, inbox RDMA name, OFED RDMA name) of the reference server's four ports, in PCI order.
REFERENCE_PORTS = (
    ("0000:3b:00.0", "ens1f0np0", "rocep59s0f0", "mlx5_0"),
    ("0000:3b:00.1", "ens1f1np1", "rocep59s0f1", "mlx5_1"),
    ("0000:86:00.0", "ens2f0np0", "rocep134s0f0", "mlx5_2"),
    ("0000:86:00.1", "ens2f1np1", "rocep134s0f1", "mlx5_3"),
)
MODELS = {"1013": "ConnectX-4", "1015": "ConnectX-4 Lx", "1017": "ConnectX-5", "101d": "ConnectX-6 Dx"}


def port(
    pci: str,
    netdev: str | None,
    rdma: str | None,
    *,
    device_id: str = "1015",
    firmware: str = "14.32.1010",
    ipv4: list[str] | None = None,
    numa: int = 0,
    **extra: Any,
) -> NicPort:
    """One ConnectX function with link up at 25 Gb/s, RoCE v2 GIDs for its IPv4 addresses."""
    gids = [
        Gid(index=0, gid="fe80:0000:0000:0000:0e42:a1ff:fe00:0000", version="v1"),
        Gid(index=1, gid="fe80:0000:0000:0000:0e42:a1ff:fe00:0000", version="v2"),
    ]
    for n, cidr in enumerate(ipv4 or []):
        address = cidr.split("/")[0]
        gids.append(Gid(index=2 + 2 * n, gid=f"0000:0000:0000:0000:0000:ffff:{address}", ipv4=address, version="v1"))
        gids.append(Gid(index=3 + 2 * n, gid=f"0000:0000:0000:0000:0000:ffff:{address}", ipv4=address, version="v2"))
    fields: dict[str, Any] = dict(
        pci=pci,
        device_id=device_id,
        model=MODELS.get(device_id, device_id),
        numa_node=numa,
        netdev=netdev,
        rdma_device=rdma,
        rdma_port=1 if rdma else None,
        link_layer="Ethernet" if rdma else None,
        rdma_state="ACTIVE" if rdma else None,
        physical_state="LINK_UP" if rdma else None,
        link_detected=True,
        speed_mbps=25000,
        mtu=1500,
        driver="mlx5_core",
        firmware=firmware,
        ipv4=list(ipv4 or []),
        gids=gids if rdma else [],
    )
    fields.update(extra)
    return NicPort(**fields)


def reference_host(
    name: str = "server1",
    *,
    ofed_names: bool = False,
    device_id: str = "1015",
    firmware: str = "14.32.1010",
    ssh_interface: str = "eno1",
    ssh_address: str = "10.0.0.11",
    ofed_stack: str | None = None,
    ofed_version: str | None = None,
    **extra: Any,
) -> DiscoveryFacts:
    """The seed-000 server as discovery sees it: Ubuntu 22.04, four ConnectX ports, SSH on eno1."""
    ports = [
        port(pci, netdev, ofed if ofed_names else inbox, device_id=device_id, firmware=firmware, numa=0 if i < 2 else 1)
        for i, (pci, netdev, inbox, ofed) in enumerate(REFERENCE_PORTS)
    ]
    fields: dict[str, Any] = dict(
        hostname=name,
        os_id="ubuntu",
        os_version="22.04",
        os_pretty="Ubuntu 22.04.5 LTS",
        kernel="5.15.0-125-generic",
        ssh_server_address=ssh_address,
        ssh_interface=ssh_interface,
        ports=ports,
        other_interfaces={"eno1": [f"{ssh_address}/24"]},
        ofed_stack=ofed_stack,
        ofed_version=ofed_version,
        modules=["ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "rdma_cm"],
    )
    fields.update(extra)
    return DiscoveryFacts(**fields)


def answers(yaml_body: str = "", hosts: tuple[str, ...] = ("server1", "server2")) -> Answers:
    """Answers for ``hosts`` (management 10.0.0.11, .12, ...) plus the YAML sections in ``yaml_body``."""
    text = "version: 1\nhosts:\n" + "".join(
        f"  - name: {h}\n    address: 10.0.0.{11 + i}\n" for i, h in enumerate(hosts)
    )
    return parse_answers(text + yaml_body)


def view(ans: Answers, facts: dict[str, dict[str, Any]]) -> ClusterView:
    """A ClusterView; model values in ``facts`` are dumped to the JSON form the runner stores."""
    dumped = {
        host: {stage: (v.model_dump(mode="json") if hasattr(v, "model_dump") else v) for stage, v in stages.items()}
        for host, stages in facts.items()
    }
    return ClusterView(ans, dumped)


# -- stage roce / gpudirect ------------------------------------------------------------------------------------
def roce_facts(
    *,
    tool: str = "mlnx_qos",
    configured: bool = False,
    ecn: bool | None = None,
    names: tuple[str, ...] = ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"),
    gid_index: int | None = 3,
    host: str = "server1",
    **extra: Any,
) -> Any:
    """Roce facts of the reference server: fresh from DOCA (trust pcp, no PFC) or already ``configured``."""
    from steps.roce.facts import RdmaCm, RoceFacts, RocePort

    ecn_tree = tool == "mlnx_qos" if ecn is None else ecn
    # mlnx_qos prints the whole map once trust is dscp; dcb app shows only the entries added
    dscp2prio = ({d: d >> 3 for d in range(64)} if tool == "mlnx_qos" else {26: 3}) if configured else {}
    ports = []
    for (pci, netdev, _inbox, _ofed), device in zip(REFERENCE_PORTS, names, strict=True):
        ecn_values = {"roce_np/enable/3": 0, "roce_rp/enable/3": 0, "roce_np/cnp_dscp": 48, "roce_np/cnp_802p_prio": 6}
        if configured:
            ecn_values.update({"roce_np/enable/3": 1, "roce_rp/enable/3": 1})
        ports.append(
            RocePort(
                netdev=netdev,
                pci=pci,
                rdma_device=device,
                mtu=9000,
                gid_index=gid_index,
                trust="dscp" if configured else "pcp",
                pfc=[0, 0, 0, 1, 0, 0, 0, 0] if configured else [0] * 8,
                dscp2prio=dscp2prio,
                ecn=ecn_values if ecn_tree else None,
            )
        )
    fields: dict[str, Any] = dict(
        qos_tool=tool,
        cma_tool=tool == "mlnx_qos",
        ports=ports,
        rdma_cm=[RdmaCm(device=d, mode="RoCE v2", tos=106 if configured else 0) for d in names],
        openibd=tool == "mlnx_qos",
    )
    fields.update(extra)
    facts = RoceFacts(**fields)
    if configured:
        from steps.roce.desired import Desired
        from steps.roce.facts import UnitState
        from steps.roce.script import script_text, unit_text

        want = Desired.from_answers(answers())
        facts.unit = UnitState(active="active", enabled="enabled")
        facts.unit_text = unit_text(facts.openibd)
        facts.script_text = script_text(host, facts, want)
        from steps.roce.script import template_text, udev_rule_text

        facts.template_text, facts.udev_rule_text = template_text(), udev_rule_text()
    return facts


# -- LLDP on a rail-optimised switched fabric (issue 14) -------------------------------------------------------
def lldp_neighbor(local: str, leaf: str, swp: str, *, pfc: list[int] | None = None, mtu: int | None = 9216) -> Any:
    """The LLDP neighbour lldpd reports on ``local``: a Cumulus-style leaf port advertising PFC and MFS."""
    from wizard.parsers.lldp import LldpNeighbor

    return LldpNeighbor(
        local_port=local,
        chassis_name=leaf,
        chassis_id="1c:34:da:00:00:01",
        chassis_id_type="mac",
        port_id=swp,
        port_id_type="ifname",
        mtu=mtu,
        pfc_enabled=[3] if pfc is None else pfc,
        pfc_willing=False,
        dcbx="ieee",
    )


def rails_host(index: int, *, leaves: dict[int, str] | None = None, nports: int = 2, **neighbor: Any) -> DiscoveryFacts:
    """gpu-00<index> with ``nports`` ConnectX-7 rails, rail i cabled to leaf-r<i> swp<index> unless ``leaves``."""
    name = f"gpu-{index:03d}"
    ports = []
    for i in range(nports):
        netdev = f"enp{i + 1}s0np0"
        p = port(f"0000:{0x10 + i:02x}:00.0", netdev, f"mlx5_{i}", device_id="1021", speed_mbps=400000, mtu=9000)
        leaf = (leaves or {}).get(i, f"leaf-r{i}")
        p.lldp = lldp_neighbor(netdev, leaf, f"swp{index}", **neighbor) if leaf else None
        ports.append(p)
    return reference_host(name, ports=ports, lldp_status="ok", ssh_address=f"10.0.0.{10 + index}")
