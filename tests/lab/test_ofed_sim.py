"""Simulation for stage ofed: NVIDIA's documented DOCA uninstall runs to the end on a simulated host."""

from __future__ import annotations

from tests.lab.conftest import install_doca, root, ssh
from wizard.lab import Lab

UNINSTALL = (
    "env DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y doca-ofed && "
    "/usr/sbin/ofed_uninstall.sh --force && "
    "env DEBIAN_FRONTEND=noninteractive apt-get autoremove -y"
)


async def test_apt_get_autoremove_needs_root_like_the_other_apt_operations(lab: Lab) -> None:
    denied = await ssh(lab, "server1", "apt-get autoremove -y")
    assert denied.exit_status == 100 and "are you root?" in denied.stderr
    done = await root(lab, "server1", "apt-get autoremove -y")
    assert done.exit_status == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded."


async def test_documented_doca_uninstall_sequence_removes_the_stack_and_keeps_the_driver_until_reload(
    lab: Lab,
) -> None:
    await install_doca(lab, "server1")
    r = await root(lab, "server1", UNINSTALL)
    assert r.exit_status == 0, r.stderr
    listed = await ssh(lab, "server1", "dpkg-query -W doca-ofed mlnx-ofed-kernel-dkms")
    assert listed.exit_status == 1 and "no packages found matching doca-ofed" in listed.stderr
    # the modules already loaded stay until the next driver reload or reboot, as on a real host
    assert (await ssh(lab, "server1", "cat /sys/module/mlx5_core/version")).stdout.strip() == "24.10-1.1.4"


async def test_other_apt_operations_still_reach_the_base_apt_get(lab: Lab) -> None:
    unknown = await root(lab, "server1", "apt-get frobnicate")
    assert (unknown.exit_status, unknown.stderr.strip()) == (100, "E: Invalid operation frobnicate")
    update = await root(lab, "server1", "apt-get update")
    assert update.exit_status == 0 and "Reading package lists..." in update.stdout


DOCA_URL = "https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu22.04/x86_64/"


async def test_apt_verifies_a_source_without_signed_by_against_every_key_in_trusted_gpg_d(lab: Lab) -> None:
    """sources.list(5) and the Debian wiki (DebianRepository/UseThirdParty): an entry without signed-by is verified
    with every key in /etc/apt/trusted.gpg.d, which is why a vendor key there is trusted for all repositories;
    with no key at all apt refuses the repository (NO_PUBKEY)."""
    write = f"echo 'deb {DOCA_URL} ./' > /etc/apt/sources.list.d/doca.list && apt-get update"
    refused = await root(lab, "server1", write)
    assert refused.exit_status == 100
    assert "NO_PUBKEY A024F6F0E6D6A281" in refused.stdout
    key = (
        "curl -fsSL -o /tmp/key.pub https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub && "
        "gpg --batch --yes --dearmor -o /etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.gpg /tmp/key.pub && apt-get update"
    )
    assert (await root(lab, "server1", key)).exit_status == 0


async def test_gpg_cannot_write_a_keyring_into_a_missing_directory(lab: Lab) -> None:
    """gpg -o into a directory that does not exist fails; /etc/apt/keyrings must be created first on hosts whose
    apt predates 2.4 (Docker's and the Debian wiki's instructions run `install -d -m 0755 /etc/apt/keyrings`)."""
    await root(lab, "server1", "rm -rf /etc/apt/keyrings")
    fetch = "curl -fsSL -o /tmp/key.pub https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub"
    r = await root(lab, "server1", f"{fetch} && gpg --batch --yes --dearmor -o /etc/apt/keyrings/k.gpg /tmp/key.pub")
    assert r.exit_status == 2 and "can't create '/etc/apt/keyrings/k.gpg'" in r.stderr
