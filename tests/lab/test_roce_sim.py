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
