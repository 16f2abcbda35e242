"""Stage roce on the inbox stack (distribution rdma-core, rocepXsYfZ names, no mlnx-tools): iproute2 dcb for PFC
and the DSCP map, configfs for RDMA-CM, no ECN tree; the boot script brings it all back after a reboot."""

from __future__ import annotations

from tests.steps.test_roce_demo import EXAMPLE, lab_runner, reboot, rerun, run, stage_status
from wizard.answers.model import parse_answers


async def test_inbox_hosts_get_dcb_pfc_dscp_app_and_configfs_tos_kept_across_a_reboot(tmp_path):
    answers = parse_answers(EXAMPLE.read_text().replace("stack: doca", "stack: inbox"))
    async with lab_runner(tmp_path, answers, doca=False) as (lab, runner):
        assert await run(runner, ["discovery", "roce"]) == 0, stage_status(runner, "roce")
        server2 = lab.host("server2")
        qos = server2.netdevs["ens2f0np0"].qos
        assert (qos.trust, qos.pfc, qos.dscp2prio[26]) == ("dscp", [0, 0, 0, 1, 0, 0, 0, 0], 3)
        assert server2.rdma_cfg["rocep134s0f0"]["tos"] == 106
        script = server2.fs.read_text("/usr/local/sbin/roce-wizard-qos.sh")
        assert "dcb app replace dev ens2f0np0 dscp-prio 26:3" in script and "mlnx_qos" not in script

        await reboot(lab, "server1", "server2")
        assert server2.netdevs["ens2f0np0"].qos.pfc == [0, 0, 0, 1, 0, 0, 0, 0]
        after = await rerun(runner, "roce")
        for host, (status, reason, changes) in after.items():
            assert (status, changes) == ("done", []), (host, reason)
        checks = {c.id: c for c in runner.store.host("server1").stage("roce").checks}
        assert checks["ecn:ens1f0np0"].status == "skip" and "inbox driver" in checks["ecn:ens1f0np0"].evidence


async def test_inbox_hosts_get_qos_back_by_themselves_after_the_mlx5_driver_is_reloaded(tmp_path):
    """Issue 13 item 2 on the inbox driver, which has no openibd.service (so no PartOf=openibd.service): reloading
    the module (`modprobe -r mlx5_ib`, which also removes the unused mlx5_core, then `modprobe mlx5_core`) re-creates
    the netdevs with driver defaults; the wizard's udev rule on the mlx5 netdev "add" event (udev(7) SYSTEMD_WANTS)
    re-applies PFC and the DSCP app entry, and RDMA-CM ToS once mlx5_ib is back (loaded by udev for the auxiliary
    mlx5_core.rdma device, 80-drivers.rules). The PFC headroom for 30 m cables (DCB PFC delay) comes back too."""
    answers = parse_answers(EXAMPLE.read_text().replace("stack: doca", "stack: inbox"))
    answers.roce.cable_length_m = 30
    async with lab_runner(tmp_path, answers, doca=False) as (lab, runner):
        assert await run(runner, ["discovery", "roce"]) == 0, stage_status(runner, "roce")
        server2 = lab.host("server2")
        assert server2.netdevs["ens2f0np0"].qos.cable_len == 30
        assert (await server2.run("modprobe -r mlx5_ib && modprobe mlx5_core && udevadm settle")).status == 0
        qos = server2.netdevs["ens2f0np0"].qos
        assert (qos.trust, qos.pfc, qos.dscp2prio[26], qos.cable_len) == ("dscp", [0, 0, 0, 1, 0, 0, 0, 0], 3, 30)
        assert server2.rdma_cfg["rocep134s0f0"]["tos"] == 106
        after = await rerun(runner, "roce")
        for host, (status, reason, changes) in after.items():
            assert (status, changes) == ("done", []), (host, reason)
