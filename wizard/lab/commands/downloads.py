"""wget and curl against the lab's simulated internet (NVIDIA's repository files; everything else is a 404)."""

from __future__ import annotations

import asyncio
import posixpath
import re
import time

from wizard.lab import packages as db
from wizard.lab.commands import command
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import FsError


def _download(url: str) -> bytes | None:
    """The simulated internet: NVIDIA's DOCA/MLNX_OFED repository files; everything else is a 404."""
    m = re.search(r"/(doca-host_(.+)_amd64\.deb)$", url)
    if m and any(d in url for d in ("mellanox.com", "nvidia.com")):
        return db.make_deb("doca-host", m.group(2))
    if url.endswith(("GPG-KEY-Mellanox.pub", "RPM-GPG-KEY-Mellanox")) and "mellanox.com" in url:
        return db.GPG_KEY.encode()
    m = re.search(r"linux\.mellanox\.com/public/repo/mlnx_ofed/([^/]+)/([^/]+)/mellanox_mlnx_ofed\.list$", url)
    if m:
        return f"deb https://linux.mellanox.com/public/repo/mlnx_ofed/{m.group(1)}/{m.group(2)}/$(ARCH) ./\n".encode()
    return None


@command("wget")
async def wget(ctx: Ctx) -> int:
    args = list(ctx.args)
    out_path = None
    prefix = None
    quiet = False
    urls = []
    while args:
        a = args.pop(0)
        if a in ("-O", "--output-document") and args:
            out_path = args.pop(0)
        elif a in ("-P", "--directory-prefix") and args:
            prefix = args.pop(0)
        elif a in ("-q", "--quiet", "-nv", "--no-verbose"):
            quiet = True
        elif a.startswith("-"):
            continue
        else:
            urls.append(a)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    for url in urls:
        data = _download(url)
        host = url.split("/")[2] if "//" in url else url
        if not quiet:
            ctx.eprint(
                f"--{stamp}--  {url}\nResolving {host} ({host})... 23.53.100.77\nConnecting to {host} "
                f"({host})|23.53.100.77|:443... connected.\nHTTP request sent, awaiting response... "
                f"{'200 OK' if data else '404 Not Found'}"
            )
        if data is None:
            ctx.eprint(f"{stamp} ERROR 404: Not Found.")
            return 8
        target = out_path or posixpath.join(prefix or ".", posixpath.basename(url))
        try:
            if target == "-":
                ctx.out.write(data.decode(errors="replace"))
            else:
                ctx.fs.write_bytes(target, data, ctx.cred, ctx.cwd)
        except FsError as exc:
            raise CommandFailed(f"{target}: {exc.reason}", 3) from None
        await asyncio.sleep(0.2 * ctx.host.time_scale)
        if not quiet:
            ctx.eprint(
                f"Length: {len(data)} [application/vnd.debian.binary-package]\nSaving to: '{target}'\n\n"
                f"{stamp} (48.2 MB/s) - '{target}' saved [{len(data)}/{len(data)}]\n"
            )
    return 0


@command("curl")
async def curl(ctx: Ctx) -> int:
    args = list(ctx.args)
    out_path = None
    remote_name = fail = False
    urls = []
    while args:
        a = args.pop(0)
        if a in ("-o", "--output") and args:
            out_path = args.pop(0)
        elif a in ("-O", "--remote-name"):
            remote_name = True
        elif a.startswith("-") and not a.startswith("--"):
            fail |= "f" in a
            remote_name |= "O" in a
        elif a == "--fail":
            fail = True
        elif not a.startswith("-"):
            urls.append(a)
    for url in urls:
        data = _download(url)
        if data is None:
            if fail:
                raise CommandFailed("curl: (22) The requested URL returned error: 404", 22)
            ctx.out.write("<html><body><h1>404 Not Found</h1></body></html>\n")
            continue
        target = out_path or (posixpath.basename(url) if remote_name else None)
        if target is None:
            ctx.out.write(data.decode(errors="replace"))
        else:
            try:
                ctx.fs.write_bytes(target, data, ctx.cred, ctx.cwd)
            except FsError as exc:
                raise CommandFailed(f"curl: (23) Failure writing output to destination: {exc.reason}", 23) from None
    return 0
