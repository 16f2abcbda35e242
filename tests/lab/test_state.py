"""Commands change simulated state the way they change real hosts: packages, drivers, netplan, sysfs, QoS."""

from __future__ import annotations

from tests.lab.conftest import DOCA_SETUP, install_doca, install_rails, root, ssh
from wizard.lab import Lab
from wizard.parsers import parse


async def test_apt_install_makes_the_tools_appear(lab: Lab) -> None:
    denied = await ssh(lab, "server1", "apt-get install -y ibverbs-utils")
    assert denied.exit_status == 100 and "are you root?" in denied.stderr
    r = await ssh(lab, "server1", "sudo -n apt-get install -y ibverbs-utils infiniband-diags perftest")
    assert r.exit_status == 0, r.stderr
    assert "Setting up ibverbs-utils (39.0-1) ..." in r.stdout
    devices = parse("ibv_devices", (await ssh(lab, "server1", "ibv_devices")).stdout).devices
    assert [d.device for d in devices] == ["rocep59s0f0", "rocep59s0f1", "rocep134s0f0", "rocep134s0f1"]
    cas = parse("ibstat", (await ssh(lab, "server1", "ibstat")).stdout).cas
    assert (cas[0].ca_type, cas[0].ports[0].rate, cas[0].ports[0].link_layer) == ("MT4117", 25, "Ethernet")
    assert (await ssh(lab, "server1", "command -v ib_write_bw")).stdout == "/usr/bin/ib_write_bw\n"
    missing = await root(lab, "server1", "apt-get install -y dcbnetlink")
    assert (missing.exit_status, missing.stderr.strip()) == (100, "E: Unable to locate package dcbnetlink")


async def test_doca_ofed_needs_its_repository_then_renames_devices_after_openibd_restart(lab: Lab) -> None:
    early = await root(lab, "server1", "apt-get install -y doca-ofed")
    assert early.exit_status == 100 and "Unable to locate package doca-ofed" in early.stderr
    await install_doca(lab, "server1", restart=False)
    # installed but the running kernel still has the inbox driver and its names
    still = parse("rdma_link", (await ssh(lab, "server1", "rdma link show")).stdout).links
    assert still[0].device == "rocep59s0f0"
    assert (await ssh(lab, "server1", "ls /sys/class/net/ens1f0np0/ecn")).exit_status == 2
    r = await root(lab, "server1", "/etc/init.d/openibd restart")
    assert r.stdout.splitlines()[-1].startswith("Loading HCA driver and Access Layer:")
    names = [x.device for x in parse("rdma_link", (await ssh(lab, "server1", "rdma link show")).stdout).links]
    assert names == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    ib2 = parse("ibdev2netdev", (await ssh(lab, "server1", "ibdev2netdev")).stdout).entries
    assert [(e.device, e.netdev, e.state) for e in ib2][:2] == [
        ("mlx5_0", "ens1f0np0", "Up"),
        ("mlx5_1", "ens1f1np1", "Up"),
    ]
    assert parse("ofed_info", (await ssh(lab, "server1", "ofed_info -s")).stdout).version == "24.10-1.1.4.0"
    assert parse("ethtool_i", (await ssh(lab, "server1", "ethtool -i ens1f0np0")).stdout).version == "24.10-1.1.4"
    assert (await ssh(lab, "server1", "cat /sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp")).stdout == "48\n"
    assert (await ssh(lab, "server1", "cat /sys/module/mlx5_core/version")).stdout == "24.10-1.1.4\n"


async def test_doca_repository_without_its_key_is_refused(lab: Lab) -> None:
    repo = "https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu22.04/x86_64/"
    line = f"deb [signed-by=/usr/share/keyrings/none.gpg] {repo} ./"
    r = await root(lab, "server1", f"echo '{line}' > /etc/apt/sources.list.d/doca.list && apt-get update")
    assert r.exit_status == 100 and "is not signed" in r.stderr


async def test_netplan_apply_sets_mtu_addresses_and_roce_gids(lab: Lab) -> None:
    await install_rails(lab)
    ifaces = {i.ifname: i for i in parse("ip_json", (await ssh(lab, "server1", "ip -j addr show")).stdout).interfaces}
    assert (ifaces["ens1f0np0"].mtu, ifaces["ens1f0np0"].ipv4) == (9000, ["192.168.11.1/24"])
    port = "/sys/class/infiniband/rocep59s0f0/ports/1"
    text = (await ssh(lab, "server1", f"grep -sH . {port}/gids/* {port}/gid_attrs/*/*")).stdout
    gids = parse("sysfs_gids", text).entries
    assert [(e.index, e.version, e.ipv4, e.netdev) for e in gids] == [
        (0, "v1", None, "ens1f0np0"),
        (1, "v2", None, "ens1f0np0"),
        (2, "v1", "192.168.11.1", "ens1f0np0"),
        (3, "v2", "192.168.11.1", "ens1f0np0"),
    ]
    await root(lab, "server1", "apt-get install -y ibverbs-utils")
    devinfo = parse("ibv_devinfo", (await ssh(lab, "server1", "ibv_devinfo -d rocep59s0f0")).stdout)
    assert devinfo.devices[0].ports[0].active_mtu == 4096  # MTU 9000 leaves room for a 4096 RoCE MTU
    ping = await ssh(lab, "server1", "ping -n -c 2 -M do -s 8972 -I ens2f1np1 192.168.14.2")
    assert ping.exit_status == 0 and "2 packets transmitted, 2 received, 0% packet loss" in ping.stdout


async def test_netplan_warns_about_open_permissions_and_rejects_the_flattened_seed_yaml(lab: Lab) -> None:
    flattened = "network:\nversion: 2\nethernets:\nens1f0:\nmtu: 9000\n"
    r = await root(lab, "server1", "tee /etc/netplan/01-bond-roce.yaml >/dev/null; netplan generate", input=flattened)
    assert r.exit_status == 1
    assert "/etc/netplan/01-bond-roce.yaml:2:1: Error in network definition: unknown key 'version'" in r.stderr
    ok = "network:\n  version: 2\n  ethernets:\n    ens1f0np0:\n      mtu: 9000\n"
    r = await root(lab, "server1", "tee /etc/netplan/01-bond-roce.yaml >/dev/null; netplan generate", input=ok)
    assert r.exit_status == 0
    assert "Permissions for /etc/netplan/01-bond-roce.yaml are too open" in r.stderr


async def test_manual_addresses_vanish_on_reboot_but_netplan_config_returns(lab: Lab) -> None:
    await install_rails(lab)
    await root(lab, "server1", "ip addr add 10.99.0.1/24 dev ens1f1np1 && ip link set dev ens2f0np0 mtu 4200")
    await root(lab, "server1", "echo nvidia-peermem > /etc/modules-load.d/peermem.conf; echo bonding >> /etc/modules")
    r = await root(lab, "server1", "systemctl reboot")
    assert r.exit_status == 0
    host = lab.host("server1")
    await host.wait_running()
    ifaces = {i.ifname: i for i in parse("ip_json", (await ssh(lab, "server1", "ip -j addr show")).stdout).interfaces}
    assert ifaces["ens1f1np1"].ipv4 == ["192.168.12.1/24"]
    assert ifaces["ens2f0np0"].mtu == 9000
    modules = [m.name for m in parse("lsmod", (await ssh(lab, "server1", "lsmod")).stdout).modules]
    assert "bonding" in modules and "nvidia_peermem" not in modules  # built without peer memory: EINVAL
    log = await root(lab, "server1", "journalctl -u systemd-modules-load.service")
    assert "Failed to insert module 'nvidia_peermem': Invalid argument" in log.stdout


async def test_sysfs_writes_through_tee_change_state_and_refuse_bad_values(lab: Lab) -> None:
    r = await ssh(lab, "server1", "echo 4200 | sudo -n tee /sys/class/net/ens1f0np0/mtu")
    assert (r.exit_status, r.stdout) == (0, "4200\n")
    assert "mtu 4200" in (await ssh(lab, "server1", "ip link show ens1f0np0")).stdout
    bad = await root(lab, "server1", "echo 99999 | tee /sys/class/net/ens1f0np0/mtu")
    assert (bad.exit_status, bad.stderr) == (1, "tee: /sys/class/net/ens1f0np0/mtu: Invalid argument\n")
    denied = await ssh(lab, "server1", "echo 1500 | tee /sys/class/net/ens1f0np0/mtu")
    assert denied.stderr == "tee: /sys/class/net/ens1f0np0/mtu: Permission denied\n"
    ip = await ssh(lab, "server1", "ip link set dev ens1f0np0 mtu 9000")
    assert (ip.exit_status, ip.stderr) == (2, "RTNETLINK answers: Operation not permitted\n")


async def test_peermem_loads_only_with_doca_and_openibd_refuses_while_it_holds_ib_core(lab: Lab) -> None:
    r = await root(lab, "server1", "modprobe nvidia-peermem")
    assert r.exit_status == 1
    # the reference driver was DKMS-built before any OFED: nvidia-peermem.c's init returns -EINVAL
    assert r.stderr == "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n"
    await install_doca(lab, "server1")
    # NVIDIA driver README "GPUDirect RDMA Peer Memory Client": installed before MLNX_OFED, install it again
    reinstall = "env DEBIAN_FRONTEND=noninteractive apt-get install --reinstall -y nvidia-dkms-550-server"
    assert (await root(lab, "server1", reinstall)).exit_status == 0
    assert (await root(lab, "server1", "modprobe nvidia-peermem")).exit_status == 0
    assert "nvidia_peermem" in (await ssh(lab, "server1", "lsmod")).stdout
    stuck = await root(lab, "server1", "/etc/init.d/openibd restart")
    assert stuck.exit_status == 1 and "in use by: nvidia_peermem" in stuck.stderr
    busy = await root(lab, "server1", "modprobe -r ib_core")
    assert busy.stderr == "modprobe: FATAL: Module ib_core is in use.\n"


async def test_mlnx_qos_sets_trust_and_pfc_per_physical_port_only(lab: Lab) -> None:
    await install_doca(lab, "server1")
    r = await root(lab, "server1", "mlnx_qos -i ens1f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0")
    qos = parse("mlnx_qos", r.stdout)
    assert (qos.trust, qos.pfc_enabled, qos.dscp2prio[26]) == ("dscp", [0, 0, 0, 1, 0, 0, 0, 0], 3)
    assert (await ssh(lab, "server1", "cat /sys/class/net/ens1f0np0/qos/trust")).stdout == "dscp\n"
    other = parse("mlnx_qos", (await ssh(lab, "server1", "mlnx_qos -i ens1f1np1")).stdout)
    assert (other.trust, other.pfc_enabled) == ("pcp", [0] * 8)
    stats = (await ssh(lab, "server1", "ethtool -S ens1f0np0")).stdout
    assert "rx_prio3_pause: 0" in stats  # per-priority pause counters appear once PFC is on for that priority
    user = await ssh(lab, "server1", "mlnx_qos -i ens1f1np1 --pfc 0,0,0,1,0,0,0,0")
    assert (user.exit_status, user.stdout) == (1, "Netlink error: Operation not permitted (1)\n")


async def test_mlnx_qos_is_lost_on_reboot_unless_an_enabled_oneshot_unit_reapplies_it(lab: Lab) -> None:
    await install_doca(lab, "server1")
    await install_doca(lab, "server2")
    script = (
        "#!/bin/bash\nset -euo pipefail\n# re-apply QoS: runtime only on mlx5\n"
        'for nd in ens1f0np0 ens1f1np1; do\n  mlnx_qos -i "$nd" --trust dscp --pfc 0,0,0,1,0,0,0,0 >/dev/null\n'
        "  if [ -e /sys/class/net/$nd/ecn/roce_np/enable/3 ]; then\n"
        "    echo 1 > /sys/class/net/$nd/ecn/roce_np/enable/3\n  fi\ndone\n"
    )
    unit = (
        "[Unit]\nDescription=RoCE QoS\nWants=network-online.target\nAfter=network-online.target openibd.service\n"
        "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/usr/local/sbin/roce-qos.sh\n"
        "[Install]\nWantedBy=multi-user.target\n"
    )
    await root(lab, "server2", "mlnx_qos -i ens1f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0")
    await root(
        lab,
        "server1",
        "tee /usr/local/sbin/roce-qos.sh >/dev/null && chmod 755 /usr/local/sbin/roce-qos.sh",
        input=script,
    )
    await root(lab, "server1", "tee /etc/systemd/system/roce-qos.service >/dev/null", input=unit)
    r = await root(lab, "server1", "systemctl daemon-reload && systemctl enable roce-qos.service")
    assert "Created symlink /etc/systemd/system/multi-user.target.wants/roce-qos.service" in r.stderr
    for name in lab.names:
        await root(lab, name, "reboot")
    for name in lab.names:
        await lab.host(name).wait_running()
    kept = parse("mlnx_qos", (await ssh(lab, "server1", "mlnx_qos -i ens1f1np1")).stdout)
    lost = parse("mlnx_qos", (await ssh(lab, "server2", "mlnx_qos -i ens1f0np0")).stdout)
    assert (kept.trust, kept.pfc_enabled[3]) == ("dscp", 1)
    assert (lost.trust, lost.pfc_enabled[3]) == ("pcp", 0)
    ecn = await ssh(lab, "server1", "cat /sys/class/net/ens1f1np1/ecn/roce_np/enable/3")
    assert ecn.stdout == "1\n"
    status = await ssh(lab, "server1", "systemctl is-active roce-qos; systemctl is-enabled roce-qos")
    assert status.stdout == "active\nenabled\n"


async def test_cross_card_bond_keeps_per_port_devices_while_a_per_card_bond_makes_roce_lag(lab: Lab) -> None:
    await install_doca(lab, "server1")
    cross = (
        "network:\n  version: 2\n  ethernets:\n    ens1f0np0: {}\n    ens1f1np1: {}\n    ens2f0np0: {}\n"
        "    ens2f1np1: {}\n  bonds:\n    bond0:\n      interfaces: [ens1f0np0, ens1f1np1, ens2f0np0, ens2f1np1]\n"
        "      mtu: 9000\n      addresses: [192.168.10.1/24]\n      parameters: {mode: balance-xor, "
        "transmit-hash-policy: layer3+4, mii-monitor-interval: 100}\n"
    )
    await root(
        lab,
        "server1",
        "tee /etc/netplan/01-bond.yaml >/dev/null && chmod 600 /etc/netplan/01-bond.yaml && netplan apply",
        input=cross,
    )
    entries = parse("ibdev2netdev", (await ssh(lab, "server1", "ibdev2netdev")).stdout).entries
    assert [(e.device, e.netdev) for e in entries] == [(f"mlx5_{i}", "bond0") for i in range(4)]
    gids = parse("show_gids", (await ssh(lab, "server1", "show_gids mlx5_3")).stdout).entries
    assert [(g.index, g.ipv4, g.version, g.netdev) for g in gids if g.ipv4] == [
        (2, "192.168.10.1", "v1", "bond0"),
        (3, "192.168.10.1", "v2", "bond0"),
    ]
    bond = parse("bonding", (await ssh(lab, "server1", "cat /proc/net/bonding/bond0")).stdout)
    assert (bond.mode, bond.transmit_hash_policy, len(bond.slaves)) == ("balance-xor", "layer3+4", 4)
    refused = await root(lab, "server1", "mlnx_qos -i bond0 --pfc 0,0,0,1,0,0,0,0")
    assert (refused.exit_status, refused.stdout) == (1, "Netlink error: Operation not supported (95)\n")
    per_card = cross.replace("ens1f0np0, ens1f1np1, ens2f0np0, ens2f1np1", "ens2f0np0, ens2f1np1").replace(
        "balance-xor", "802.3ad"
    )
    await root(lab, "server1", "tee /etc/netplan/01-bond.yaml >/dev/null && netplan apply", input=per_card)
    links = parse("rdma_link", (await ssh(lab, "server1", "rdma link show")).stdout).links
    assert [x.device for x in links] == ["mlx5_0", "mlx5_1", "mlx5_bond_0"]


async def test_cma_roce_mode_and_configfs_share_the_rdma_cm_default(lab: Lab) -> None:
    await install_doca(lab, "server1")
    assert (await ssh(lab, "server1", "cma_roce_mode -d mlx5_0 -p 1")).stdout == "You must be root to run this\n"
    assert (await root(lab, "server1", "cma_roce_mode -d mlx5_0 -p 1")).stdout == "RoCE v2\n"
    assert (await root(lab, "server1", "cma_roce_mode -d mlx5_0 -p 1 -m 1")).stdout == "IB/RoCE v1\n"
    missing = await root(lab, "server1", "cma_roce_mode -d mlx5_0 -p 2")
    assert (missing.exit_status, missing.stdout) == (1, "Device mlx5_0 port 2 does not exist\n")
    base = "/sys/kernel/config/rdma_cm/mlx5_1"
    r = await root(
        lab,
        "server1",
        f"mkdir -p {base} && echo 'RoCE v2' > {base}/ports/1/default_roce_mode && "
        f"echo 106 > {base}/ports/1/default_roce_tos && cma_roce_tos -d mlx5_1 -p 1",
    )
    assert r.stdout == "106\n", r.stderr
    bad = await root(lab, "server1", "mkdir /sys/kernel/config/rdma_cm/mlx5_9")
    assert "No such device" in bad.stderr


async def test_systemctl_reports_units_like_systemd(lab: Lab) -> None:
    r = await ssh(lab, "server1", "systemctl is-active ssh lldpad chrony; systemctl is-enabled systemd-timesyncd")
    assert r.stdout == "active\ninactive\ninactive\nenabled\n"
    gone = await root(lab, "server1", "systemctl start nope")
    assert (gone.exit_status, gone.stderr) == (5, "Failed to start nope.service: Unit nope.service not found.\n")
    await root(lab, "server1", "apt-get install -y chrony")
    r = await ssh(lab, "server1", "systemctl is-active chrony systemd-timesyncd")
    assert r.stdout == "active\ninactive\n"


async def test_doca_dkms_build_fails_without_the_running_kernels_headers(lab: Lab) -> None:
    setup = DOCA_SETUP.replace(" linux-headers-$(uname -r)", "")
    r = await root(lab, "server1", setup)
    assert r.exit_status == 100
    assert "Error! Your kernel headers for kernel 5.15.0-125-generic cannot be found." in r.stdout
    assert "E: Sub-process /usr/bin/dpkg returned an error code (1)" in r.stderr
    assert (await ssh(lab, "server1", "dpkg-query -W mlnx-ofed-kernel-dkms")).exit_status == 1
