"""Lab support for stage nccl: nccl-tests built and run by mpirun, torchrun, and NCCL's log following host state."""

from __future__ import annotations

import asyncio

from wizard.lab import Lab, SimHost, packages, parse_fault
from wizard.parsers.nccl import parse_nccl_all_reduce_perf, parse_nccl_debug

NCCL_PACKAGES = (
    "libnccl2 libnccl-dev openmpi-bin libopenmpi-dev build-essential git cuda-nvcc-12-4 cuda-cudart-dev-12-4"
)
CONF = "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1\nNCCL_SOCKET_IFNAME==eno1\nNCCL_CROSS_NIC=0\nNCCL_IB_TC=106\n"
MPIRUN = (
    "mpirun -np 16 -N 8 -H 10.0.0.11:8,10.0.0.12:8 --bind-to numa --mca btl_tcp_if_include eno1 "
    "-x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV -x LD_LIBRARY_PATH "
    "/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1"
)


async def ready_host(host: SimHost, index: int, conf: str = CONF, mtu: int = 9000) -> None:
    """What ofed, network and gpudirect leave behind, plus NCCL and an MPI build of nccl-tests."""
    for pkg in packages.DOCA:
        packages.install_files(host, pkg)
    host.power_on()
    for rail, netdev in enumerate(p.netdev for p in host.profile.ports):
        for command in (
            f"ip link set {netdev} mtu {mtu} up",
            f"ip addr add 192.168.{11 + rail}.{index}/24 dev {netdev}",
        ):
            assert (await host.run(command)).status == 0
    await host.run("modprobe nvidia-peermem")
    assert (await host.run(f"env DEBIAN_FRONTEND=noninteractive apt-get install -y {NCCL_PACKAGES}")).status == 0
    clone = "git clone --depth 1 --branch v2.17.9 https://github.com/NVIDIA/nccl-tests.git /opt/nccl-tests"
    assert (await host.run(clone)).status == 0
    make = await host.run(
        "make -C /opt/nccl-tests -j 8 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi "
        "CUDA_HOME=/usr/local/cuda-12.4 NCCL_HOME=/usr BUILDDIR=/opt/nccl-tests/build"
    )
    assert make.status == 0, make.stderr
    host.fs.install("/etc/nccl.conf", conf)


async def ready_lab(*faults: str, conf: str = CONF) -> Lab:
    lab = Lab.reference(["server1", "server2"], faults=[parse_fault(f) for f in faults])
    lab.time_scale = 0.001
    for index, host in enumerate(lab.hosts.values(), 1):
        await ready_host(host, index, conf)
    return lab


async def run_job(lab: Lab) -> tuple[str, int]:
    result = await lab.hosts["server1"].run(MPIRUN, user="ubuntu")
    return result.stdout + result.stderr, result.status


async def test_build_produces_an_mpi_linked_all_reduce_perf():
    lab = await ready_lab()
    ldd = await lab.hosts["server2"].run("ldd /opt/nccl-tests/build/all_reduce_perf")
    assert "libmpi.so.40 => /usr/lib/x86_64-linux-gnu/libmpi.so.40" in ldd.stdout
    assert "libnccl.so.2 => /usr/lib/x86_64-linux-gnu/libnccl.so.2" in ldd.stdout
    missing = await lab.hosts["server2"].run("ldd /opt/nope/all_reduce_perf")
    assert missing.status == 1 and "No such file or directory" in missing.stderr


async def test_make_without_nvcc_fails_like_the_real_build():
    lab = Lab.reference(["server1", "server2"])
    lab.time_scale = 0.001
    host = lab.hosts["server1"]
    await host.run("apt-get install -y git build-essential libnccl-dev libopenmpi-dev")
    await host.run("git clone --depth 1 --branch v2.17.9 https://github.com/NVIDIA/nccl-tests.git /opt/nccl-tests")
    failed = await host.run("make -C /opt/nccl-tests MPI=1")
    assert failed.status == 2 and "/usr/local/cuda/bin/nvcc: not found" in failed.stderr


async def test_healthy_rails_run_net_ib_with_gdrdma_on_every_hca():
    output, status = await run_job(await ready_lab())
    assert status == 0 and output.startswith("# simulated")
    log = parse_nccl_debug(output)
    assert log.transport == "IB" and log.ib_devices == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert log.gdr_enabled and not log.gdr_disabled and set(log.hosts) == {"server1", "server2"}
    perf = parse_nccl_all_reduce_perf(output)
    assert perf.nranks == 16 and perf.out_of_bounds_ok and 10 < (perf.peak_busbw_gbytes() or 0) < 12.5


async def test_missing_peermem_disables_gdr_on_that_host_only():
    output, status = await run_job(await ready_lab("server2:no_peermem"))
    server2 = parse_nccl_debug("\n".join(line for line in output.splitlines() if line.startswith("server2:")))
    server1 = parse_nccl_debug("\n".join(line for line in output.splitlines() if line.startswith("server1:")))
    assert status == 0 and server2.gdr_disabled and server1.gdr_enabled and not server1.gdr_disabled


async def test_wrong_hca_list_falls_back_to_sockets():
    lab = await ready_lab()
    lab.hosts["server2"].fs.install("/etc/nccl.conf", CONF.replace("mlx5_", "mlx4_"))
    output, status = await run_job(lab)
    log = parse_nccl_debug(output)
    assert status == 0 and log.transport == "Socket" and log.ib_no_device
    assert (parse_nccl_all_reduce_perf(output).peak_busbw_gbytes() or 99) < 1.5


async def test_a_link_down_lowers_bus_bandwidth():
    healthy = parse_nccl_all_reduce_perf((await run_job(await ready_lab()))[0]).peak_busbw_gbytes() or 0
    output, _ = await run_job(await ready_lab("server2:link_down=ens2f1np1"))
    degraded = parse_nccl_all_reduce_perf(output).peak_busbw_gbytes() or 0
    assert degraded < 9.0 < healthy
    assert parse_nccl_debug(output).ib_devices == ["mlx5_0", "mlx5_1", "mlx5_2"]


async def test_crossed_cables_fail_the_job_with_nccl_warn():
    output, status = await run_job(await ready_lab("server2:crosswire"))
    log = parse_nccl_debug(output)
    assert status == 1 and any("Network is unreachable" in e for e in log.errors)


async def test_mpirun_refuses_root_without_the_override():
    lab = await ready_lab()
    refused = await lab.hosts["server1"].run(MPIRUN)
    assert refused.status == 1 and "--allow-run-as-root" in refused.stderr


async def test_torchrun_nodes_meet_at_the_master_and_rank_zero_reports():
    lab = await ready_lab()
    for host in lab.hosts.values():
        host.fs.install("/usr/local/bin/torchrun", b"\x7fELF roce-wizard-sim:torchrun\n", 0o755)
        host.fs.install("/opt/roce-wizard/nccl_allreduce_smoke.py", "print('smoke')\n")
    line = ("env NCCL_DEBUG=INFO torchrun --nnodes 2 --node-rank {r} --nproc-per-node 8 --master-addr 10.0.0.11 "
            "--master-port 29500 /opt/roce-wizard/nccl_allreduce_smoke.py")  # fmt: skip
    first, second = await asyncio.gather(
        *(lab.hosts[h].run(line.format(r=r), user="ubuntu") for r, h in enumerate(lab.hosts))
    )
    assert first.status == 0 and second.status == 0
    assert "roce-wizard-allreduce: world=16" in first.stdout and "roce-wizard-allreduce" not in second.stdout
    assert parse_nccl_debug(second.stdout).transport == "IB"
