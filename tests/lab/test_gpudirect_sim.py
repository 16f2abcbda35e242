"""Lab support for stage gpudirect: modinfo -F, NVIDIA module licenses, nvidia-peermem loading and its failures."""

from __future__ import annotations

from tests.lab.conftest import install_doca, root, ssh
from wizard.lab import Lab, SimHost, packages
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
    filename = (await h.run("modinfo -F filename nvidia-peermem")).stdout
    assert filename == "/lib/modules/5.15.0-125-generic/updates/dkms/nvidia-peermem.ko\n"  # DKMS's copy
    missing = await h.run("modinfo -F filename nv_peer_mem")
    assert missing.status == 1 and "Module nv_peer_mem not found" in missing.stderr


async def test_nvidia_license_tells_open_from_proprietary_kernel_modules():
    h = host()
    assert (await h.run("modinfo -F license nvidia")).stdout == "NVIDIA\n"
    h.packages["nvidia-dkms-550-server-open"] = "550.127.05-0ubuntu0.22.04.1"
    assert (await h.run("modinfo -F license nvidia")).stdout == "Dual MIT/GPL\n"
    assert "license:        Dual MIT/GPL" in (await h.run("modinfo nvidia")).stdout


async def test_nvidia_peermem_loads_on_doca_and_fails_on_the_inbox_stack():
    """A host image with the driver installed after DOCA loads it; on a host that never had DOCA the module was
    built without the peer-memory API (EINVAL, nvidia-peermem.c); built against DOCA and booted on the inbox
    ib_core after DOCA is removed, the symbols are missing (roce-correctness.md item 25: "Unknown symbol
    ib_register_peer_memory_client")."""
    h = host()
    assert (await h.run("modprobe nvidia-peermem")).status == 0
    assert "nvidia_peermem" in (await h.run("lsmod")).stdout
    inbox = host(doca=False)
    never = await inbox.run("modprobe nvidia-peermem")
    assert (never.status, never.stderr) == (1, "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n")
    removed = host()
    for pkg in packages.DOCA:
        packages.remove_files(removed, pkg)
    removed.power_on()
    failed = await removed.run("modprobe nvidia-peermem")
    assert failed.status == 1 and "Unknown symbol in module" in failed.stderr
    assert "Unknown symbol ib_register_peer_memory_client (err -2)" in (await removed.run("dmesg")).stdout


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


# NVIDIA Linux driver README, chapter "GPUDirect RDMA Peer Memory Client": "If the NVIDIA GPU driver is installed
# before MLNX_OFED, the GPU driver must be uninstalled and installed again to make sure nvidia-peermem is compiled
# with the RDMA APIs that are provided by MLNX_OFED." NVIDIA/open-gpu-kernel-modules kernel-open/nvidia-peermem:
# the Kbuild fragment links against /usr/src/ofa_kernel/<arch>/<kernel>/Module.symvers only when that tree exists at
# build time, and nvidia-peermem.c's nv_mem_client_init() is `return -EINVAL;` when the conftest found no
# ib_register_peer_memory_client (NV_MLNX_IB_PEER_MEM_SYMBOLS_PRESENT unset), so modprobe says "Invalid argument".
KERNEL = "5.15.0-125-generic"
REINSTALL = "env DEBIAN_FRONTEND=noninteractive apt-get install --reinstall -y nvidia-dkms-550-server"


async def test_gpu_driver_installed_before_doca_gives_a_peermem_that_cannot_load(lab: Lab) -> None:
    """The reference host's driver 550 was DKMS-built before DOCA existed on it: after installing DOCA-OFED and
    restarting the driver, nvidia-peermem (built without the peer-memory API, no ib_core dependency) fails with
    EINVAL (NVIDIA driver README "GPUDirect RDMA Peer Memory Client"; nvidia-peermem.c `return -EINVAL`)."""
    await install_doca(lab, "server1")
    failed = await root(lab, "server1", "modprobe nvidia-peermem")
    assert failed.exit_status == 1
    assert failed.stderr.strip() == "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument"
    assert "nvidia_peermem" not in lab.host("server1").modules
    assert (await ssh(lab, "server1", "modinfo -F depends nvidia-peermem")).stdout == "\n"


async def test_reinstalling_the_nvidia_dkms_package_rebuilds_peermem_against_doca(lab: Lab) -> None:
    """`apt-get install --reinstall nvidia-dkms-550-server` runs the package's DKMS removal and rebuild, now with
    /usr/src/ofa_kernel present: the rebuilt nvidia-peermem depends on ib_core and loads (NVIDIA driver README
    "GPUDirect RDMA Peer Memory Client": uninstall and install the GPU driver again)."""
    await install_doca(lab, "server1")
    before = (await ssh(lab, "server1", "dkms status nvidia")).stdout
    assert before == f"nvidia/550.127.05, {KERNEL}, x86_64: installed\n"
    r = await root(lab, "server1", REINSTALL)
    assert r.exit_status == 0, r.stderr
    assert "0 upgraded, 0 newly installed, 1 reinstalled, 0 to remove and 0 not upgraded." in r.stdout
    assert f"Building initial module for {KERNEL}" in r.stdout
    assert (await ssh(lab, "server1", "modinfo -F depends nvidia-peermem")).stdout == "ib_core,nvidia\n"
    # the loaded nvidia.ko stays in memory; nvidia-peermem was never loaded, so the rebuilt file is what loads now
    assert (await root(lab, "server1", "modprobe nvidia-peermem")).exit_status == 0
    assert "nvidia_peermem" in lab.host("server1").modules


async def test_dkms_autoinstall_skips_built_modules_and_remove_then_install_rebuilds(lab: Lab) -> None:
    """dkms(8): autoinstall only builds modules not yet installed for the kernel, so it does not fix a build that
    predates DOCA; `dkms remove nvidia/550.127.05 -k K` then `dkms install nvidia/550.127.05 -k K` rebuilds."""
    await install_doca(lab, "server1")
    await root(lab, "server1", "dkms autoinstall")
    assert (await ssh(lab, "server1", "modinfo -F depends nvidia-peermem")).stdout == "\n"
    gone = await root(lab, "server1", f"dkms remove nvidia/550.127.05 -k {KERNEL}")
    assert gone.exit_status == 0, gone.stderr
    assert (await ssh(lab, "server1", "dkms status nvidia")).stdout == ""
    assert (await root(lab, "server1", "modprobe nvidia-peermem")).exit_status == 1  # nothing on disk now
    built = await root(lab, "server1", f"dkms install nvidia/550.127.05 -k {KERNEL}")
    assert built.exit_status == 0, built.stderr
    assert (await ssh(lab, "server1", "modinfo -F depends nvidia-peermem")).stdout == "ib_core,nvidia\n"
    assert (await root(lab, "server1", "modprobe nvidia-peermem")).exit_status == 0


async def test_peermem_built_for_one_doca_release_is_refused_by_another(lab: Lab) -> None:
    """A module built against one MLNX_OFED/DOCA Module.symvers meets another release's ib_core after an upgrade:
    "disagrees about version of symbol ib_register_peer_memory_client" (NVIDIA/gpu-operator issue #2868's dmesg;
    Mellanox/nv_peer_memory issue #84: "Did you upgrade OFED after installing nv_peer_mem?")."""
    await install_doca(lab, "server1")
    assert (await root(lab, "server1", REINSTALL)).exit_status == 0
    h = lab.host("server1")
    h.packages["mlnx-ofed-kernel-dkms"] = "25.01.OFED.25.01.0.6.0.1-1"  # what an upgrade to DOCA 2.10 installs
    failed = await root(lab, "server1", "modprobe nvidia-peermem")
    assert failed.exit_status == 1 and "Unknown symbol in module" in failed.stderr
    dmesg = (await root(lab, "server1", "dmesg")).stdout
    assert "nvidia_peermem: disagrees about version of symbol ib_register_peer_memory_client" in dmesg
    assert "nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -22)" in dmesg
