"""Package tools: apt-get/apt, dpkg, dpkg-query, and wget/curl for the DOCA host repository package."""

from __future__ import annotations

import asyncio
import re

from wizard.lab import gpudirect_dkms, services
from wizard.lab import packages as db
from wizard.lab.commands import command
from wizard.lab.commands.dpkg import _dpkg_install, _drop
from wizard.lab.streams import CommandFailed, Ctx

LOCK_ERROR = (
    "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)\n"
    "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), are you root?"
)


async def _pause(ctx: Ctx, seconds: float) -> None:
    await asyncio.sleep(seconds * ctx.host.time_scale)


class PostInstallFailed(Exception):
    """A maintainer script failed: dpkg leaves the package unconfigured and apt-get exits 100."""


async def post_install(ctx: Ctx, pkg: db.Pkg) -> None:
    """Maintainer-script effects that matter to the lab (DKMS build, enabled services)."""
    host = ctx.host
    if pkg.name == "mlnx-ofed-kernel-dkms":
        kernel = host.profile.kernel
        ctx.print(f"Loading new mlnx-ofed-kernel-{pkg.version.split('-')[0]} DKMS files...")
        ctx.print(f"Building for {kernel}")
        if not ctx.fs.exists(f"/lib/modules/{kernel}/build"):
            # DKMS cannot build without the running kernel's headers; the package stays unconfigured.
            ctx.print(f"Error! Your kernel headers for kernel {kernel} cannot be found.")
            ctx.print(f"Please install the linux-headers-{kernel} package,")
            ctx.print("or use the --kernelsourcedir option to tell DKMS where it's located")
            raise PostInstallFailed(pkg.name)
        ctx.print(f"Building initial module for {kernel}")
        await _pause(ctx, 3.0)
        ctx.print("Done.")
    if gpudirect_dkms.is_nvidia_dkms(pkg.name):
        # the package's postinst: dkms build + install against the running kernel and, through the Kbuild's
        # /usr/src/ofa_kernel probe, against DOCA/MLNX_OFED's peer-memory API if it is installed now
        kernel = host.profile.kernel
        if not ctx.fs.exists(f"/lib/modules/{kernel}/build"):
            ctx.print(f"Loading new nvidia-{gpudirect_dkms.driver_version(host)} DKMS files...")
            ctx.print(f"Building for {kernel}")
            ctx.print(f"Error! Your kernel headers for kernel {kernel} cannot be found.")
            raise PostInstallFailed(pkg.name)
        gpudirect_dkms.remove(host, kernel)
        gpudirect_dkms.install(host, kernel)
        for line in gpudirect_dkms.build_messages(host, kernel):
            ctx.print(line)
        await _pause(ctx, 3.0)
    if pkg.name == "chrony":
        # Ubuntu's chrony conflicts with systemd-timesyncd: apt removes it
        timesyncd = services.find_unit(host, "systemd-timesyncd")
        if timesyncd is not None:
            await services.stop(host, timesyncd)
            services.disable(host, timesyncd)
        ctx.print("Removing systemd-timesyncd (249.11-0ubuntu3.12) ...")
        host.packages.pop("systemd-timesyncd", None)
    units = {"mlnx-ofed-kernel-utils": "openibd", "lldpad": "lldpad", "lldpd": "lldpd", "chrony": "chrony"}
    unit_name = units.get(pkg.name)
    if unit_name:
        unit = services.find_unit(host, unit_name)
        if unit is not None:
            for msg in services.enable(host, unit):
                ctx.print(msg)
            if unit_name != "openibd":
                await services.start(host, unit)


def _resolve(ctx: Ctx, names: list[str], reinstall: bool = False) -> list[db.Pkg]:
    """Requested packages plus missing dependencies, dependencies first (apt's unpack order); with
    ``--reinstall`` a requested package already at its candidate version is unpacked and configured again."""
    out: list[db.Pkg] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        pkg = db.candidate(ctx.host, name)
        if pkg is None:
            return
        for dep in pkg.depends:
            visit(dep)
        if ctx.host.packages.get(pkg.name) != pkg.version or (reinstall and name in names):
            out.append(pkg)

    for n in names:
        visit(n)
    return out


@command("apt-get", "apt")
async def apt_get(ctx: Ctx) -> int:
    args = [a for a in ctx.args]
    assume_yes = any(a in ("-y", "--yes", "--assume-yes", "-qy", "-yq") for a in args) or "APT_ASSUME_YES" in ctx.env
    i = 0
    words: list[str] = []
    while i < len(args):
        a = args[i]
        if a == "-o" and i + 1 < len(args):
            i += 2
            continue
        if not a.startswith("-"):
            words.append(a)
        i += 1
    if not words:
        raise (
            CommandFailed("E: Invalid operation", 100) if ctx.name == "apt-get" else CommandFailed("apt 2.4.13 (amd64)")
        )
    op, names = words[0], words[1:]
    if op in ("update", "install", "remove", "purge", "upgrade", "dist-upgrade") and not ctx.root:
        raise CommandFailed(LOCK_ERROR, 100)
    if op == "update":
        return await _update(ctx)
    if op in ("upgrade", "dist-upgrade"):
        ctx.print("Reading package lists...\nBuilding dependency tree...\nReading state information...")
        ctx.print("Calculating upgrade...\n0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.")
        return 0
    if op == "install":
        return await _install(ctx, names, assume_yes, reinstall="--reinstall" in args)
    if op in ("remove", "purge"):
        return await _remove(ctx, names, op)
    raise CommandFailed(f"E: Invalid operation {op}", 100)


async def _update(ctx: Ctx) -> int:
    codename = ctx.host.profile.os_codename
    lines = [
        f"Hit:1 http://archive.ubuntu.com/ubuntu {codename} InRelease",
        f"Get:2 http://archive.ubuntu.com/ubuntu {codename}-updates InRelease [128 kB]",
        f"Get:3 http://archive.ubuntu.com/ubuntu {codename}-security InRelease [129 kB]",
        "Hit:4 https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64  InRelease",
    ]
    errors: list[str] = []
    if ctx.fs.exists("/etc/apt/sources.list.d/doca.list"):
        text = ctx.read_text("/etc/apt/sources.list.d/doca.list")
        line = next((x for x in text.splitlines() if x.strip().startswith("deb")), "")
        m = re.search(r"\]\s*(\S+)\s+(\S+)", line) or re.search(r"deb\s+(\S+)\s+(\S+)", line)
        where = f"{m.group(1)} {m.group(2)}" if m else line
        release = db.doca_release_of(text)
        key = re.search(r"signed-by=([^\] ]+)", line)
        if release not in db.DOCA_RELEASES:
            lines += [f"Err:5 {where} InRelease", "  404  Not Found [IP: 23.53.100.77 443]"]
            errors.append(f"E: The repository '{where} Release' does not have a Release file.")
            ctx.host.doca_repo = None
        elif "trusted=yes" not in line and not (
            ctx.fs.exists(key.group(1)) if key else _globally_trusted(ctx, DOCA_KEY_DATA)
        ):
            lines += [
                f"Get:5 {where} InRelease [1,578 B]",
                f"Err:5 {where} InRelease",
                "  The following signatures couldn't be verified because the public key is not available: "
                "NO_PUBKEY A024F6F0E6D6A281",
            ]
            errors.append(f"E: The repository '{where} InRelease' is not signed.")
            ctx.host.doca_repo = None
        else:
            lines.append(f"Get:5 {where} InRelease [1,578 B]")
            ctx.host.doca_repo = release
    for line in lines:
        ctx.print(line)
        await _pause(ctx, 0.1)
    ctx.print("Fetched 257 kB in 1s (312 kB/s)\nReading package lists...")
    if errors:
        raise CommandFailed(
            "\n".join(errors) + "\nN: Updating from such a repository can't be done securely, and is "
            "therefore disabled by default.",
            100,
        )
    return 0


DOCA_KEY_DATA = b"roce-wizard-lab-dearmored-key"  # what the lab's gpg --dearmor writes for NVIDIA's key


def _globally_trusted(ctx: Ctx, marker: bytes) -> bool:
    """sources.list(5): an entry without signed-by is checked against every key in /etc/apt/trusted.gpg.d (and the
    legacy trusted.gpg), which is why the Debian wiki (DebianRepository/UseThirdParty) forbids vendor keys there."""
    try:
        names = ctx.fs.listdir("/etc/apt/trusted.gpg.d")
    except OSError:
        return False
    return any(marker in ctx.fs.read_bytes(f"/etc/apt/trusted.gpg.d/{n}") for n in names)


async def _install(ctx: Ctx, names: list[str], assume_yes: bool, *, reinstall: bool = False) -> int:
    ctx.print("Reading package lists...\nBuilding dependency tree...\nReading state information...")
    local = [n for n in names if n.endswith(".deb")]
    names = [n.split("=", 1)[0] for n in names if not n.endswith(".deb")]
    for n in names:
        if db.candidate(ctx.host, n) is None:
            raise CommandFailed(f"E: Unable to locate package {n}", 100)
    for path in local:
        rc = await _dpkg_install(ctx, [path])
        if rc:
            return rc
    todo = _resolve(ctx, names, reinstall)
    for n in names:
        if all(p.name != n for p in todo):
            ctx.print(f"{n} is already the newest version ({ctx.host.packages.get(n, '')}).")
    if not todo:
        ctx.print("0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.")
        return 0
    new = [p for p in todo if p.name not in ctx.host.packages]
    again = [p for p in todo if ctx.host.packages.get(p.name) == p.version]
    upgraded = [p for p in todo if p.name in ctx.host.packages and p not in again]
    extra = [p.name for p in new if p.name not in names]
    if extra:
        ctx.print("The following additional packages will be installed:\n  " + " ".join(extra))
    if new:
        ctx.print("The following NEW packages will be installed:\n  " + " ".join(p.name for p in new))
    if upgraded:
        ctx.print("The following packages will be upgraded:\n  " + " ".join(p.name for p in upgraded))
    redo = f"{len(again)} reinstalled, " if again else ""
    ctx.print(f"{len(upgraded)} upgraded, {len(new)} newly installed, {redo}0 to remove and 0 not upgraded.")
    size = sum(p.size_kb for p in todo)
    grows = sum(p.size_kb for p in todo if p not in again)  # a reinstall replaces files of the same size
    ctx.print(
        f"Need to get {size / 1000:.1f} MB of archives.\nAfter this operation, "
        + (f"{grows * 3 / 1000:.1f} MB of additional" if grows else "0 B of additional")
        + " disk space will be used."
    )
    if (extra or upgraded) and not assume_yes:
        ctx.print("Do you want to continue? [Y/n] Abort.")
        return 1
    for k, p in enumerate(todo, 1):
        origin = {
            "doca": f"https://linux.mellanox.com/public/repo/doca/{ctx.host.doca_repo}/ubuntu22.04/x86_64 ./",
            "cuda": "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64 ",
        }.get(p.repo, f"http://archive.ubuntu.com/ubuntu {ctx.host.profile.os_codename}/main amd64")
        ctx.print(f"Get:{k} {origin} {p.name} amd64 {p.version} [{p.size_kb} kB]")
    ctx.print(f"Fetched {size / 1000:.1f} MB in 2s ({size / 2000:.1f} MB/s)")
    for p in todo:
        if p.name in ctx.host.packages:
            ctx.print(f"Preparing to unpack .../{db.deb_filename(p)} ...")
            ctx.print(f"Unpacking {p.name} ({p.version}) over ({ctx.host.packages[p.name]}) ...")
        else:
            ctx.print(f"Selecting previously unselected package {p.name}.")
            ctx.print(f"Preparing to unpack .../{db.deb_filename(p)} ...")
            ctx.print(f"Unpacking {p.name} ({p.version}) ...")
        db.install_files(ctx.host, p, provisioning=False)
        await _pause(ctx, 0.05)
    failed: list[str] = []
    for p in todo:
        ctx.print(f"Setting up {p.name} ({p.version}) ...")
        try:
            await post_install(ctx, p)
        except PostInstallFailed:
            ctx.eprint(
                f"dpkg: error processing package {p.name} (--configure):\n installed {p.name} package "
                "post-installation script subprocess returned error exit status 1"
            )
            ctx.host.packages.pop(p.name, None)
            failed.append(p.name)
    ctx.print("Processing triggers for man-db (2.10.2-1) ...\nProcessing triggers for libc-bin (2.35-0ubuntu3.8) ...")
    if failed:
        raise CommandFailed(
            "Errors were encountered while processing:\n"
            + "".join(f" {n}\n" for n in failed)
            + "E: Sub-process /usr/bin/dpkg returned an error code (1)",
            100,
        )
    return 0


async def _remove(ctx: Ctx, names: list[str], op: str) -> int:
    ctx.print("Reading package lists...\nBuilding dependency tree...\nReading state information...")
    gone = [n for n in names if n in ctx.host.packages]
    for n in names:
        if n not in ctx.host.packages:
            ctx.print(f"Package '{n}' is not installed, so not removed")
    ctx.print(f"0 upgraded, 0 newly installed, {len(gone)} to remove and 0 not upgraded.")
    for n in gone:
        ctx.print(f"Removing {n} ({ctx.host.packages[n]}) ...")
        unit = services.find_unit(ctx.host, n)
        if unit is not None:
            await services.stop(ctx.host, unit)
            services.disable(ctx.host, unit)
        _drop(ctx, n)
    return 0


@command("apt-cache")
async def apt_cache(ctx: Ctx) -> int:
    if ctx.args[:1] == ["policy"]:
        for n in ctx.args[1:]:
            cand = db.candidate(ctx.host, n)
            ctx.print(
                f"{n}:\n  Installed: {ctx.host.packages.get(n, '(none)')}\n  Candidate: "
                f"{cand.version if cand else '(none)'}"
            )
        return 0
    return 0
