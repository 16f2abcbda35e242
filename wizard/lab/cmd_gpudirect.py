"""Simulation for stage gpudirect: ``modinfo -F FIELD`` and the licenses the NVIDIA kernel modules really carry.

The proprietary NVIDIA modules say ``license: NVIDIA``; the open GPU kernel modules (packages ``*-open``, e.g.
nvidia-dkms-550-server-open) say ``Dual MIT/GPL``, which is how DMA-BUF support is told apart; nvidia-peermem is
``Dual BSD/GPL`` in both. Wraps the lab's plain modinfo, which prints whole records.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

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
        for key, value in record:
            if field is None:
                ctx.print(f"{key + ':':<15} {value}")
            elif key == field:
                ctx.print(value)
    return status
