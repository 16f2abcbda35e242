"""A bare reference host answers discovery commands over real SSH, in the formats real hardware prints."""

from __future__ import annotations

import re

from tests.fixture_files import real_output
from tests.lab.conftest import root, ssh
from wizard.lab import Lab
from wizard.parsers import parse


async def test_bare_host_names_rdma_devices_by_pci_path_like_inbox_rdma_core(lab: Lab) -> None:
    r = await ssh(lab, "server1", "rdma link show")
    links = parse("rdma_link", r.stdout).links
    assert [(x.device, x.port, x.state, x.netdev) for x in links] == [
        ("rocep59s0f0", 1, "ACTIVE", "ens1f0np0"),
        ("rocep59s0f1", 1, "ACTIVE", "ens1f1np1"),
        ("rocep134s0f0", 1, "ACTIVE", "ens2f0np0"),
        ("rocep134s0f1", 1, "ACTIVE", "ens2f1np1"),
    ]
    # one PCI function = one RDMA device with only port 1 (never "mlx5_0 port 2")
    assert all(x.port == 1 for x in links)


async def test_lspci_lists_four_connectx4_lx_functions(lab: Lab) -> None:
    r = await ssh(lab, "server2", "lspci -D -nn -d 15b3:")
    devices = parse("lspci", r.stdout).devices
    assert [d.address for d in devices] == ["0000:3b:00.0", "0000:3b:00.1", "0000:86:00.0", "0000:86:00.1"]
    assert {(d.vendor_id, d.device_id, d.description) for d in devices} == {
        ("15b3", "1015", "Mellanox Technologies MT27710 Family [ConnectX-4 Lx]")
    }


async def test_ip_json_shows_mgmt_address_and_pci_parents(lab: Lab) -> None:
    r = await ssh(lab, "server1", "ip -j -d addr show")
    ifaces = {i.ifname: i for i in parse("ip_json", r.stdout).interfaces}
    assert ifaces["eno1"].ipv4 == ["10.0.0.11/24"]
    assert ifaces["ens2f1np1"].mtu == 1500
    assert ifaces["ens2f1np1"].parent_dev == "0000:86:00.1"
    assert "LOWER_UP" in ifaces["ens1f0np0"].flags


async def test_mgmt_address_comes_from_the_answers_file() -> None:
    lab = Lab.reference(["a", "b"], mgmt_addresses={"a": "172.16.5.20/16", "b": "172.16.5.21"})
    await lab.start()
    try:
        r = await ssh(lab, "a", "printenv SSH_CONNECTION")
        client, port, server, sport = r.stdout.split()
        assert (client, server, sport) == ("10.0.0.1", "172.16.5.20", "22") and port.isdigit()
        r = await ssh(lab, "b", "ip -4 -br addr show dev eno1")
        assert "172.16.5.21/24" in r.stdout
    finally:
        await lab.stop()


async def test_ethtool_reports_25g_link_and_connectx_firmware(lab: Lab) -> None:
    link = parse("ethtool", (await ssh(lab, "server1", "ethtool ens1f0np0")).stdout)
    assert (link.speed_mbps, link.link_detected, link.lanes) == (25000, True, 1)
    info = parse("ethtool_i", (await ssh(lab, "server1", "ethtool -i ens2f0np0")).stdout)
    assert (info.driver, info.firmware_version, info.psid, info.bus_info) == (
        "mlx5_core",
        "14.32.1010",
        "MT_2420110034",
        "0000:86:00.0",
    )
    assert info.version == "5.15.0-125-generic"  # in-tree driver reports the kernel release


async def test_ethtool_without_root_says_wake_on_lan_is_not_permitted(lab: Lab) -> None:
    user = (await ssh(lab, "server1", "ethtool ens1f0np0")).stdout
    admin = (await root(lab, "server1", "ethtool ens1f0np0")).stdout
    assert "Cannot get wake-on-lan settings: Operation not permitted" in user
    assert "\tWake-on: d" in admin and "Cannot get wake-on-lan" not in admin


async def test_gpus_and_topology_match_the_reference_server(lab: Lab) -> None:
    gpus = parse("nvidia_smi_L", (await ssh(lab, "server1", "nvidia-smi -L")).stdout).gpus
    assert [g.name for g in gpus] == ["NVIDIA L20"] * 8
    query = "nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version --format=csv"
    rows = parse("nvidia_smi_query", (await ssh(lab, "server1", query)).stdout).rows
    assert rows[0] == {
        "index": "0",
        "name": "NVIDIA L20",
        "pci.bus_id": "00000000:38:00.0",
        "memory.total": "46068 MiB",
        "driver_version": "550.127.05",
    }
    text = (await ssh(lab, "server1", "nvidia-smi topo -m")).stdout
    topo = parse("nvidia_smi_topo", text)
    assert topo.matrix["GPU0"]["NIC0"] == "PXB" and topo.matrix["GPU0"]["NIC2"] == "SYS"
    assert topo.matrix["NIC0"]["NIC1"] == "PIX"
    assert "  NIC0: rocep59s0f0\n" in text  # the legend names the devices as they are called right now


async def test_nvidia_smi_query_honours_noheader_and_nounits(lab: Lab) -> None:
    r = await ssh(lab, "server1", "nvidia-smi --query-gpu=index,memory.total --format=csv,noheader,nounits")
    assert r.stdout.splitlines()[7] == "7, 46068"


async def test_os_release_says_it_is_simulated(lab: Lab) -> None:
    text = (await ssh(lab, "server1", "cat /etc/os-release")).stdout
    release = parse("os_release", text)
    assert (release.id, release.version_id, release.variant_id) == ("ubuntu", "22.04", "roce-wizard-sim")
    assert 'VARIANT="roce-wizard simulated host"' in text
    assert (await ssh(lab, "server1", "uname -r")).stdout == "5.15.0-125-generic\n"


async def test_modules_loaded_at_boot_exclude_peermem(lab: Lab) -> None:
    names = [m.name for m in parse("lsmod", (await ssh(lab, "server1", "lsmod")).stdout).modules]
    for wanted in ("mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_cm", "nvidia", "nvidia_drm"):
        assert wanted in names
    assert "nvidia_peermem" not in names


async def test_sysfs_gid_table_reads_like_the_kernel_cache(lab: Lab) -> None:
    r = await ssh(
        lab,
        "server1",
        "grep -sH . /sys/class/infiniband/*/ports/1/gids/[0-3] /sys/class/infiniband/*/ports/1/gid_attrs/types/[0-3]",
    )
    # unused types/N entries fail with EINVAL: grep -s hides the message but still exits 2
    assert r.exit_status == 2
    entries = parse("sysfs_gids", r.stdout).entries
    first = [e for e in entries if e.device == "rocep59s0f0"]
    assert [(e.index, e.version) for e in first] == [(0, "v1"), (1, "v2")]
    assert first[0].gid == "fe80:0000:0000:0000:0e42:a1ff:fe00:0000"
    err = await ssh(lab, "server1", "cat /sys/class/infiniband/rocep59s0f0/ports/1/gid_attrs/types/7")
    assert err.stderr == "cat: /sys/class/infiniband/rocep59s0f0/ports/1/gid_attrs/types/7: Invalid argument\n"
    zero = await ssh(lab, "server1", "cat /sys/class/infiniband/rocep59s0f0/ports/1/gids/254")
    assert zero.stdout == "0000:0000:0000:0000:0000:0000:0000:0000\n"


async def test_sysfs_exposes_numa_and_links_like_real_devices(lab: Lab) -> None:
    r = await ssh(
        lab,
        "server1",
        "grep -sH . /sys/bus/pci/devices/0000:86:00.1/numa_node "
        "/sys/class/net/ens1f0np0/device/numa_node /sys/class/net/ens1f0np0/speed",
    )
    assert r.stdout.splitlines() == [
        "/sys/bus/pci/devices/0000:86:00.1/numa_node:1",
        "/sys/class/net/ens1f0np0/device/numa_node:0",
        "/sys/class/net/ens1f0np0/speed:25000",
    ]
    link = await ssh(lab, "server1", "readlink -f /sys/class/net/ens2f0np0/device")
    assert link.stdout.strip().endswith("/0000:86:00.0")


async def test_rdma_userspace_tools_are_absent_on_a_bare_host(lab: Lab) -> None:
    r = await ssh(lab, "server1", "ibv_devinfo")
    assert (r.exit_status, r.stderr) == (127, "bash: line 1: ibv_devinfo: command not found\n")
    q = await ssh(lab, "server1", "dpkg-query -W ibverbs-utils perftest rdma-core")
    assert q.exit_status == 1
    assert "dpkg-query: no packages found matching ibverbs-utils" in q.stderr
    assert parse("dpkg_query", q.stdout).packages == {"rdma-core": "39.0-1"}
    for tool in ("ofed_info", "ibdev2netdev", "show_gids", "mlnx_qos", "cma_roce_mode"):
        assert (await ssh(lab, "server1", f"command -v {tool}")).exit_status == 1


async def test_ibv_devinfo_keeps_rdma_core_tab_layout(lab: Lab) -> None:
    await root(lab, "server1", "apt-get install -y ibverbs-utils")
    ours = (await ssh(lab, "server1", "ibv_devinfo -d rocep59s0f0")).stdout
    real = real_output("ibv_devinfo", "rdma-tools-note-cx4lx-4dev-3.txt").split("\n\n")[0]

    def layout(text: str) -> list[str]:
        return [
            re.sub(r"[^\t:]+", "", line.split(":")[0]) + line.split(":")[0].strip()
            for line in text.splitlines()
            if ":" in line and not line.startswith("#")
        ]

    assert layout(ours) == layout(real.split("\n", 1)[1])
