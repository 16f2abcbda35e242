"""Pure parsers for real tool outputs.

Every parser is a function ``parse_<tool>(text: str) -> Parsed`` that never runs a command. The registry below
names the tools ``roce-wizard parse TOOL`` accepts and where their parser lives; modules are imported lazily so
the CLI starts fast.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from wizard.parsers.common import Parsed, ParseError

# tool name -> "module:function"
TOOLS: dict[str, str] = {
    # RDMA devices and ports
    "ibdev2netdev": "wizard.parsers.rdma:parse_ibdev2netdev",
    "ibv_devices": "wizard.parsers.rdma:parse_ibv_devices",
    "ibv_devinfo": "wizard.parsers.rdma:parse_ibv_devinfo",
    "ibstat": "wizard.parsers.rdma:parse_ibstat",
    "show_gids": "wizard.parsers.rdma:parse_show_gids",
    "sysfs_gids": "wizard.parsers.rdma:parse_sysfs_gids",
    "rdma_link": "wizard.parsers.rdma:parse_rdma_link",
    "cma_roce_mode": "wizard.parsers.rdma:parse_cma_roce_mode",
    # InfiniBand fabric: subnet manager, links to switch ports, topology, port state and P_Keys from sysfs
    "sminfo": "wizard.parsers.infiniband:parse_sminfo",
    "iblinkinfo": "wizard.parsers.infiniband:parse_iblinkinfo",
    "ibnetdiscover": "wizard.parsers.infiniband:parse_ibnetdiscover",
    "sysfs_ib_ports": "wizard.parsers.infiniband:parse_sysfs_ib_ports",
    "sysfs_pkeys": "wizard.parsers.infiniband:parse_sysfs_pkeys",
    # Ethernet side
    "ethtool": "wizard.parsers.ethtool:parse_ethtool",
    "ethtool_i": "wizard.parsers.ethtool:parse_ethtool_i",
    "ethtool_S": "wizard.parsers.ethtool:parse_ethtool_S",
    "bonding": "wizard.parsers.netdev:parse_bonding",
    "ip_link": "wizard.parsers.netdev:parse_ip_link",
    "ip_json": "wizard.parsers.netdev:parse_ip_json",
    "ip_route_get": "wizard.parsers.iproute:parse_ip_route_get",
    "mlnx_qos": "wizard.parsers.qos:parse_mlnx_qos",
    # LLDP neighbours (switch, switch port, DCBX/PFC and MTU they advertise)
    "lldpctl_json": "wizard.parsers.lldp:parse_lldpctl_json",
    "lldptool": "wizard.parsers.lldp:parse_lldptool",
    # System
    "lspci": "wizard.parsers.system:parse_lspci",
    "lspci_vvv": "wizard.parsers.pcie:parse_lspci_vvv",
    "mlxconfig_q": "wizard.parsers.mlxconfig:parse_mlxconfig_q",
    "lsmod": "wizard.parsers.system:parse_lsmod",
    "ofed_info": "wizard.parsers.system:parse_ofed_info",
    "os_release": "wizard.parsers.system:parse_os_release",
    "dpkg_query": "wizard.parsers.system:parse_dpkg_query",
    # Performance tests
    "ib_write_bw": "wizard.parsers.perftest:parse_ib_write_bw",
    "ib_read_bw": "wizard.parsers.perftest:parse_ib_read_bw",
    "ib_send_bw": "wizard.parsers.perftest:parse_ib_send_bw",
    "ib_write_lat": "wizard.parsers.perftest:parse_ib_write_lat",
    "ib_read_lat": "wizard.parsers.perftest:parse_ib_read_lat",
    "ib_send_lat": "wizard.parsers.perftest:parse_ib_send_lat",
    "ibv_rc_pingpong": "wizard.parsers.perftest:parse_ibv_rc_pingpong",
    "nccl_all_reduce_perf": "wizard.parsers.nccl:parse_nccl_all_reduce_perf",
    "nccl_debug": "wizard.parsers.nccl:parse_nccl_debug",
    # GPUs
    "nvidia_smi_topo": "wizard.parsers.gpu:parse_nvidia_smi_topo",
    "nvidia_smi_L": "wizard.parsers.gpu:parse_nvidia_smi_L",
    "nvidia_smi_query": "wizard.parsers.gpu:parse_nvidia_smi_query",
}


def get_parser(tool: str) -> Callable[[str], Parsed]:
    """Return the parser for ``tool``; ``KeyError`` names the tool when it is unknown."""
    module_name, _, func_name = TOOLS[tool].partition(":")
    return getattr(import_module(module_name), func_name)  # type: ignore[no-any-return]


def parse(tool: str, text: str) -> Parsed:
    """Parse ``text`` as the output of ``tool``; raises :class:`ParseError` when it is not."""
    return get_parser(tool)(text)


__all__ = ["TOOLS", "ParseError", "Parsed", "get_parser", "parse"]
