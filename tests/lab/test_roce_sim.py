"""Lab support for stage roce: runtime QoS/ECN/RDMA-CM state is lost on reboot, lldpad resets PFC, the rdma_cm
configfs tree behaves like the kernel's, and enabled oneshot units run their script at boot."""

from __future__ import annotations

from wizard.lab import SimHost, packages
from wizard.lab.faults import parse_fault
from wizard.lab.profile import reference_profile

CFG = "/sys/kernel/config/rdma_cm"


def host(*faults: str, doca: bool = True) -> SimHost:
    h = SimHost("server1", reference_profile(0), "10.0.0.11/24", faults=[parse_fault(f) for f in faults])
    if doca:
        for pkg in packages.DOCA:
            packages.install_files(h, pkg)
        h.power_on()
    return h


async def reboot(h: SimHost) -> None:
    h.reboot_seconds = 0.01
    h.request_reboot()
    await h.wait_running()


async def test_mlnx_qos_settings_are_lost_on_reboot():
    h = host()
    assert (await h.run("mlnx_qos -i ens1f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0")).status == 0
    assert h.netdevs["ens1f0np0"].qos.pfc[3] == 1
    await reboot(h)
    qos = h.netdevs["ens1f0np0"].qos
    assert (qos.trust, qos.pfc) == ("pcp", [0] * 8)


async def test_ecn_sysfs_exists_on_doca_only_and_takes_tee_on_stdin():
    h = host()
    path = "/sys/class/net/ens1f0np0/ecn/roce_np/enable/3"
    assert (await h.run(f"tee {path}", stdin="1\n")).status == 0
    assert (await h.run(f"cat {path}")).stdout == "1\n"
    inbox = host(doca=False)
    assert (await inbox.run("ls /sys/class/net/ens1f0np0/ecn")).status != 0


async def test_lldpad_fault_resets_pfc_until_lldpad_is_stopped():
    h = host("server1:pfc_off")
    await h.start_units()
    assert (await h.run("systemctl is-active lldpad")).stdout == "active\n"
    await h.run("mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0")
    assert h.netdevs["ens1f0np0"].qos.pfc == [0] * 8
    assert (await h.run("systemctl disable --now lldpad.service")).status == 0
    await h.run("mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0")
    assert h.netdevs["ens1f0np0"].qos.pfc[3] == 1


async def test_rdma_cm_configfs_groups_hold_roce_mode_and_tos_until_reboot():
    h = host()
    assert (await h.run(f"ls {CFG}")).stdout == ""
    assert (await h.run(f"mkdir -p {CFG}/mlx5_0")).status == 0
    assert (await h.run(f"cat {CFG}/mlx5_0/ports/1/default_roce_mode")).stdout == "RoCE v2\n"
    assert (await h.run(f"echo 106 > {CFG}/mlx5_0/ports/1/default_roce_tos")).status == 0
    assert (await h.run("cma_roce_tos -d mlx5_0 -p 1")).stdout == "106\n"  # one store, two views
    bad = await h.run(f"echo 'RoCE v3' > {CFG}/mlx5_0/ports/1/default_roce_mode")
    assert bad.status != 0
    missing = await h.run(f"mkdir {CFG}/mlx5_9")
    assert missing.status != 0 and "No such device" in missing.stderr
    await reboot(h)
    assert (await h.run(f"ls {CFG}")).stdout == ""
    assert (await h.run("cma_roce_tos -d mlx5_0 -p 1")).stdout == "0\n"


async def test_rdma_cm_configfs_needs_the_rdma_cm_module():
    h = host()
    await h.run("modprobe -r rdma_ucm rdma_cm")
    h.modules = [m for m in h.modules if m not in ("rdma_ucm", "rdma_cm")]
    assert (await h.run(f"mkdir {CFG}/mlx5_0")).status != 0


async def test_an_enabled_oneshot_unit_runs_its_script_at_boot():
    h = host()
    script = "#!/bin/bash\nset -euo pipefail\nmlnx_qos -i ens1f0np0 --trust dscp >/dev/null\n"
    h.fs.install("/usr/local/sbin/qos.sh", script, 0o755)
    h.fs.install(
        "/etc/systemd/system/qos.service",
        "[Unit]\nDescription=qos\nAfter=network-online.target\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        "ExecStart=/usr/local/sbin/qos.sh\n[Install]\nWantedBy=multi-user.target\n",
    )
    assert (await h.run("systemctl enable qos.service")).status == 0
    await reboot(h)
    assert h.netdevs["ens1f0np0"].qos.trust == "dscp"
    assert (await h.run("systemctl is-active qos.service")).stdout == "active\n"


# -- driver reload (issue 13 item 2) -----------------------------------------------------------------------------
RULE = (
    'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", TAG+="systemd", ENV{SYSTEMD_WANTS}+="qos@$name.service"\n'
)
TEMPLATE = (
    "[Unit]\nDescription=qos on %I\nBindsTo=sys-subsystem-net-devices-%i.device\n"
    "After=sys-subsystem-net-devices-%i.device\n[Service]\nType=oneshot\nExecStart=/usr/local/sbin/qos.sh %I\n"
)


def install_rule(h: SimHost) -> None:
    h.fs.install("/usr/local/sbin/qos.sh", '#!/bin/bash\nset -euo pipefail\nmlnx_qos -i "$1" --trust dscp >/dev/null\n',
                 0o755)  # fmt: skip
    h.fs.install("/etc/systemd/system/qos@.service", TEMPLATE)
    h.fs.install("/etc/udev/rules.d/90-qos.rules", RULE)


async def test_openibd_restart_resets_trust_pfc_ecn_and_the_rdma_cm_tos():
    """mlx5 keeps DCB, ECN and RDMA-CM state in driver memory, not in the NIC: `/etc/init.d/openibd restart`
    unloads and reloads mlx5_core, the netdevs are unregistered and registered again with driver defaults, and the
    rdma_cm configfs group of the device is removed with it (NVIDIA MLNX_OFED/DOCA docs, "RoCE Configuration":
    settings made by mlnx_qos and cma_roce_tos are not persistent)."""
    h = host()
    ecn = "/sys/class/net/ens1f0np0/ecn/roce_np/enable/3"
    assert (await h.run("mlnx_qos -i ens1f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0")).status == 0
    assert (await h.run(f"tee {ecn}", stdin="1\n")).status == 0
    assert (await h.run("cma_roce_tos -d mlx5_0 -p 1 -t 106")).status == 0
    before = h.netdevs["ens1f0np0"].ifindex
    assert (await h.run("/etc/init.d/openibd restart")).status == 0
    dev = h.netdevs["ens1f0np0"]
    assert dev.ifindex != before  # a new netdev, not the old one kept
    assert (dev.qos.trust, dev.qos.pfc) == ("pcp", [0] * 8)
    assert (await h.run(f"cat {ecn}")).stdout == f"{h.profile.ecn_enable_default}\n"
    assert (await h.run("cma_roce_tos -d mlx5_0 -p 1")).stdout == "0\n"


async def test_reloading_the_inbox_mlx5_driver_drops_the_dcb_dscp_app_table():
    """The kernel keeps DCB APP entries per netdev (net/dcb/dcbnl.c, keyed by ifindex) and mlx5 deletes its DSCP
    entries when the netdev goes away (en_dcbnl.c mlx5e_dcbnl_delete_app): after `modprobe -r mlx5_ib mlx5_core;
    modprobe mlx5_core` `dcb app show` is empty and the port trusts PCP again."""
    h = host(doca=False)
    assert (await h.run("dcb app add dev ens1f0np0 dscp-prio 26:3")).status == 0
    assert h.netdevs["ens1f0np0"].qos.trust == "dscp"
    assert (await h.run("modprobe -r mlx5_ib && modprobe mlx5_core")).status == 0  # -r takes unused mlx5_core too
    assert h.netdevs["ens1f0np0"].qos.trust == "pcp"
    assert (await h.run("dcb app show dev ens1f0np0 dscp-prio")).stdout.split() == ["dscp-prio"]


async def test_starting_an_active_oneshot_unit_does_not_run_it_again():
    """systemctl(1) start: a unit that is already active (a RemainAfterExit=yes oneshot stays "active (exited)")
    gets no new start job, its ExecStart does not run again; only restart runs it again."""
    h = host()
    h.fs.install("/usr/local/sbin/count.sh", "#!/bin/bash\necho run >> /tmp/count\n", 0o755)
    h.fs.install("/etc/systemd/system/count.service",
                 "[Unit]\nDescription=count\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
                 "ExecStart=/usr/local/sbin/count.sh\n")  # fmt: skip
    for _ in range(2):
        assert (await h.run("systemctl start count.service")).status == 0
    assert h.fs.read_text("/tmp/count") == "run\n"
    assert (await h.run("systemctl restart count.service")).status == 0
    assert h.fs.read_text("/tmp/count") == "run\nrun\n"


async def test_a_udev_rule_on_mlx5_netdev_add_starts_a_template_unit_per_port_after_openibd_restart():
    """udev(7): ENV{SYSTEMD_WANTS} on a device tagged "systemd" (99-systemd.rules tags every net device) becomes a
    Wants= of its .device unit, acted on each time the device becomes active (systemd.device(5)); $name is the
    interface name after renaming, a template name gets its instance (systemd.unit(5) %i/%I). So a driver reload
    starts qos@PORT.service once per re-created port, with no wizard involved."""
    h = host()
    install_rule(h)
    assert (await h.run("/etc/init.d/openibd restart")).status == 0
    for port in h.profile.ports:
        assert h.netdevs[port.netdev].qos.trust == "dscp", port.netdev
    assert (await h.run("systemctl is-active qos@ens1f0np0.service")).stdout == "inactive\n"  # oneshot, done
    assert any("qos on ens1f0np0" in e.message for e in h.journal if e.unit == "qos@ens1f0np0.service")


async def test_the_same_udev_rule_fires_when_the_inbox_mlx5_core_module_is_reloaded():
    """Inbox driver, no openibd: `modprobe mlx5_core` registers the netdevs (a kernel "add" uevent each) and udev
    loads mlx5_ib for the auxiliary mlx5_core.rdma device by its modalias (80-drivers.rules, kmod builtin), so the
    RDMA devices come back too."""
    h = host(doca=False)
    install_rule(h)
    h.fs.install("/usr/local/sbin/qos.sh", '#!/bin/bash\nset -euo pipefail\ndcb app replace dev "$1" dscp-prio 26:3\n',
                 0o755)  # fmt: skip
    assert (await h.run("modprobe -r mlx5_ib && modprobe mlx5_core")).status == 0  # -r takes unused mlx5_core too
    assert (await h.run("udevadm settle")).status == 0
    assert "mlx5_ib" in h.modules
    assert [h.netdevs[p.netdev].qos.trust for p in h.profile.ports] == ["dscp"] * len(h.profile.ports)
