"""Lab support for stage gpudirect: modinfo -F, NVIDIA module licenses, nvidia-peermem loading and its failures."""

from __future__ import annotations

from wizard.lab import SimHost, packages
from wizard.lab.faults import parse_fault
from wizard.lab.profile import reference_profile


def host(*faults: str, doca: bool = True) -> SimHost:
    h = SimHost("server1", reference_profile(0), "10.0.0.11/24", faults=[parse_fault(f) for f in faults])
    if doca:
        for pkg in packages.DOCA:
            packages.install_files(h, pkg)
        h.power_on()
    return h


async def test_modinfo_field_prints_only_the_value():
    h = host()
    assert (await h.run("modinfo -F version nvidia")).stdout == "550.127.05\n"
    assert (await h.run("modinfo -F filename nvidia-peermem")).stdout.endswith("/nvidia_peermem.ko\n")
    missing = await h.run("modinfo -F filename nv_peer_mem")
    assert missing.status == 1 and "Module nv_peer_mem not found" in missing.stderr


async def test_nvidia_license_tells_open_from_proprietary_kernel_modules():
    h = host()
    assert (await h.run("modinfo -F license nvidia")).stdout == "NVIDIA\n"
    h.packages["nvidia-dkms-550-server-open"] = "550.127.05-0ubuntu0.22.04.1"
    assert (await h.run("modinfo -F license nvidia")).stdout == "Dual MIT/GPL\n"
    assert "license:        Dual MIT/GPL" in (await h.run("modinfo nvidia")).stdout


async def test_nvidia_peermem_loads_on_doca_and_fails_with_unknown_symbol_on_inbox():
    h = host()
    assert (await h.run("modprobe nvidia-peermem")).status == 0
    assert "nvidia_peermem" in (await h.run("lsmod")).stdout
    inbox = host(doca=False)
    failed = await inbox.run("modprobe nvidia-peermem")
    assert failed.status == 1 and "Unknown symbol in module" in failed.stderr
    assert "Unknown symbol ib_register_peer_memory_client" in (await inbox.run("dmesg")).stdout


async def test_no_peermem_fault_makes_modprobe_fail_even_on_doca():
    h = host("server1:no_peermem")
    assert (await h.run("modprobe nvidia-peermem")).status == 1
    assert "nvidia_peermem" not in h.modules


async def test_modules_load_d_loads_nvidia_peermem_at_boot():
    h = host()
    h.fs.install("/etc/modules-load.d/nvidia-peermem.conf", "nvidia-peermem\n")
    h.reboot_seconds = 0.01
    h.request_reboot()
    await h.wait_running()
    assert "nvidia_peermem" in h.modules


async def test_nvidia_smi_topo_names_the_current_rdma_devices():
    h = host()
    out = (await h.run("nvidia-smi topo -m")).stdout
    assert "NIC0: mlx5_0" in out and "NIC3: mlx5_3" in out
