"""Simulation for stage gpudirect: ``modinfo -F FIELD``, the NVIDIA modules' licenses and files, and ``dkms``.

The proprietary NVIDIA modules say ``license: NVIDIA``; the open GPU kernel modules (packages ``*-open``, e.g.
nvidia-dkms-550-server-open) say ``Dual MIT/GPL``, which is how DMA-BUF support is told apart; nvidia-peermem says
``Linux-OpenIB`` (MODULE_LICENSE in kernel-open/nvidia-peermem/nvidia-peermem.c). nvidia-peermem's ``depends`` is
``ib_core,nvidia`` only when it was built against MLNX_OFED/DOCA's peer-memory API, empty otherwise (see
wizard/lab/gpudirect_dkms.py). Wraps the lab's plain modinfo, which prints whole records.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from wizard.lab import gpudirect_dkms as dkms_db
from wizard.lab.commands import REGISTRY, command
from wizard.lab.streams import BufferSink, CommandFailed, Ctx

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

_plain = REGISTRY["modinfo"]
NVIDIA_MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm")


def nvidia_license(host: SimHost) -> str:
    """``NVIDIA`` for the proprietary driver, ``Dual MIT/GPL`` when an open-kernel-module package is installed."""
    open_modules = any(name.startswith("nvidia-") and name.endswith("-open") for name in host.packages)
    return "Dual MIT/GPL" if open_modules else "NVIDIA"


def _records(text: str) -> list[list[tuple[str, str]]]:
    records: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        if key == "filename":
            records.append([])
        if records:
            records[-1].append((key, value.strip()))
    return records


@command("modinfo")
async def modinfo(ctx: Ctx) -> int:
    args = list(ctx.args)
    field = None
    names = []
    while args:
        a = args.pop(0)
        if a in ("-F", "--field"):
            if not args:
                raise CommandFailed("modinfo: option requires an argument -- 'F'", 1)
            field = args.pop(0)
        elif a.startswith("--field="):
            field = a.split("=", 1)[1]
        elif re.fullmatch(r"-F\S+", a):
            field = a[2:]
        elif not a.startswith("-"):
            names.append(a)
    out = BufferSink()
    status = await _plain(dataclasses.replace(ctx, argv=[ctx.argv[0], *names], out=out))
    for record in _records(out.getvalue()):
        name = next((v for k, v in record if k == "name"), "")
        if name in NVIDIA_MODULES:
            record[:] = [(k, nvidia_license(ctx.host) if k == "license" else v) for k, v in record]
        if name == "nvidia_peermem":
            record[:] = _peermem_record(ctx.host, record)
        for key, value in record:
            if field is None:
                ctx.print(f"{key + ':':<15} {value}")
            elif key == field:
                ctx.print(value)
    return status


def _peermem_record(host: SimHost, record: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The on-disk nvidia-peermem.ko: its path, its license, and ib_core in depends only with peer-memory symbols."""
    path = dkms_db.peermem_file(host) or next((v for k, v in record if k == "filename"), "")
    symvers = dkms_db.peermem_symvers(host)
    depends = "" if symvers in (None, dkms_db.NO_PEER_MEMORY) else "ib_core,nvidia"
    fields = {"filename": path, "license": "Linux-OpenIB", "depends": depends}
    return [(k, fields.get(k, v)) for k, v in record]


DKMS_USAGE = "Usage: /usr/sbin/dkms [action] [options]"


def _dkms_target(ctx: Ctx, args: list[str]) -> tuple[str | None, str | None, bool]:
    """(module/version, kernel, --all) from dkms arguments (``nvidia/550.127.05`` or ``-m nvidia -v 550.127.05``)."""
    target, kernel, every, module, version = None, None, False, None, None
    while args:
        a = args.pop(0)
        if a == "-k" and args:
            kernel = args.pop(0).split("/")[0]
        elif a == "-m" and args:
            module = args.pop(0)
        elif a == "-v" and args:
            version = args.pop(0)
        elif a == "--all":
            every = True
        elif not a.startswith("-"):
            target = a
    if module:
        target = f"{module}/{version}" if version else module
    return target, kernel, every


@command("dkms")
async def dkms(ctx: Ctx) -> int:
    """dkms status / build / install / remove / autoinstall for the NVIDIA driver's DKMS module (dkms(8))."""
    host = ctx.host
    args = list(ctx.args)
    if not args:
        raise CommandFailed(DKMS_USAGE, 4)
    action, rest = args[0], args[1:]
    force = "--force" in rest
    target, kernel, every = _dkms_target(ctx, [a for a in rest if a != "--force"])
    kernel = kernel or host.profile.kernel
    if action == "status":
        lines = dkms_db.status_lines(host)
        if target:
            lines = [ln for ln in lines if ln.startswith(target.split("/")[0] + "/")]
        for line in lines:
            ctx.print(line)
        return 0
    if not ctx.root:
        raise CommandFailed("Error! You must be root to use this command.", 1)
    ours = f"nvidia/{dkms_db.driver_version(host)}"
    if action == "autoinstall":
        # only modules not yet installed for this kernel are built: an installed one is left as it is
        if "nvidia-dkms" in " ".join(host.packages) and not dkms_db.installed(host, kernel):
            return _build_install(ctx, kernel)
        return 0
    if action not in ("build", "install", "remove"):
        raise CommandFailed(f"Error! Unknown action: {action}\n{DKMS_USAGE}", 4)
    if target is None or target.split("/")[0] != "nvidia":
        raise CommandFailed(
            f"Error! Could not find module source directory.\nDirectory: /usr/src/{target} does not exist.", 4
        )
    if target != ours:
        raise CommandFailed(f"Error! The module/version combo: {target} is not located in the DKMS tree.", 3)
    if action == "remove":
        if not every and not dkms_db.built(host, kernel):
            raise CommandFailed(
                f"Error! There is no instance of {ours} for kernel {kernel} ({dkms_db.ARCH}) located in the DKMS tree.",
                3,
            )
        ctx.print(
            f"Module {ours} for kernel {kernel} ({dkms_db.ARCH}).\n"
            "Before uninstall, this module version was ACTIVE on this kernel."
        )
        dkms_db.remove(host, None if every else kernel)
        ctx.print(f"Deleting from: /lib/modules/{kernel}/updates/dkms/\ndepmod....")
        return 0
    if action == "build":
        if dkms_db.built(host, kernel) and not force:
            raise CommandFailed(
                f"Error! This module/version has already been built on: {kernel}\nDirectory "
                f"/var/lib/dkms/{ours}/{kernel}/{dkms_db.ARCH} already exists. Use the dkms remove function before "
                "trying to build again.",
                3,
            )
        if not _headers(ctx, kernel):
            return 1
        dkms_db.build(host, kernel)
        ctx.print("Building module(s)... done.\nDKMS: build completed.")
        return 0
    if dkms_db.installed(host, kernel) and not force:
        ctx.print(
            f"Module {ours} already installed on kernel {kernel} ({dkms_db.ARCH}), skip. "
            "You may override by specifying --force."
        )
        return 0
    if force:
        dkms_db.remove(host, kernel)
    return _build_install(ctx, kernel)


def _headers(ctx: Ctx, kernel: str) -> bool:
    if ctx.fs.exists(f"/lib/modules/{kernel}/build"):
        return True
    ctx.eprint(f"Error! Your kernel headers for kernel {kernel} cannot be found.")
    return False


def _build_install(ctx: Ctx, kernel: str) -> int:
    if not _headers(ctx, kernel):
        return 1
    dkms_db.install(ctx.host, kernel)
    for line in dkms_db.build_messages(ctx.host, kernel)[1:]:
        ctx.print(line)
    return 0
