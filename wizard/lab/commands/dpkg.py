"""dpkg, dpkg-query, gpg --dearmor and ofed_uninstall.sh."""

from __future__ import annotations

import fnmatch
import re

from wizard.lab import gpudirect_dkms
from wizard.lab import packages as db
from wizard.lab.commands import command
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import FsError


async def _dpkg_install(ctx: Ctx, paths: list[str]) -> int:
    for path in paths:
        try:
            data = ctx.fs.read_bytes(path, ctx.cred, ctx.cwd)
        except FsError as exc:
            raise CommandFailed(f"dpkg: error: cannot access archive '{path}': {exc.reason}", 2) from None
        pkg = db.read_deb(data)
        if pkg is None:
            raise CommandFailed(
                f"dpkg-deb: error: '{path}' is not a Debian format archive\n"
                f"dpkg: error processing archive {path} (--install):\n"
                " dpkg-deb --control subprocess returned error exit status 2\n"
                f"Errors were encountered while processing:\n {path}",
                1,
            )
        if pkg.name in ctx.host.packages:
            ctx.print(
                f"(Reading database ... 187420 files and directories currently installed.)\n"
                f"Preparing to unpack {path} ...\nUnpacking {pkg.name} ({pkg.version}) over ({pkg.version}) ..."
            )
        else:
            ctx.print(
                f"Selecting previously unselected package {pkg.name}.\n(Reading database ... 187420 files and "
                f"directories currently installed.)\nPreparing to unpack {path} ...\n"
                f"Unpacking {pkg.name} ({pkg.version}) ..."
            )
        db.install_files(ctx.host, pkg, provisioning=False)
        ctx.print(f"Setting up {pkg.name} ({pkg.version}) ...")
    return 0


@command("dpkg")
async def dpkg(ctx: Ctx) -> int:
    args = list(ctx.args)
    if not args:
        raise CommandFailed("dpkg: error: need an action option\n\nType dpkg --help for help.", 2)
    action, rest = args[0], args[1:]
    if action in ("-i", "--install"):
        if not ctx.root:
            raise CommandFailed("dpkg: error: requested operation requires superuser privilege", 2)
        return await _dpkg_install(ctx, rest)
    if action in ("-l", "--list"):
        ctx.print(
            "Desired=Unknown/Install/Remove/Purge/Hold\n| Status=Not/Inst/Conf-files/Unpacked/halF-conf/"
            "Half-inst/trig-aWait/Trig-pend\n|/ Err?=(none)/Reinst-required (Status,Err: uppercase=bad)\n"
            "||/ Name                    Version                        Architecture Description\n"
            "+++-=======================-==============================-============-"
            "==================================="
        )
        hits = _matching(ctx, rest) if rest else sorted(ctx.host.packages)
        if rest and not hits:
            raise CommandFailed(f"dpkg-query: no packages found matching {rest[0]}", 1)
        for n in hits:
            ctx.print(f"ii  {n:<23} {ctx.host.packages[n]:<30} amd64        {DESCRIPTIONS.get(n, n)}")
        return 0
    if action in ("-s", "--status"):
        status = 0
        for n in rest:
            if n in ctx.host.packages:
                ctx.print(
                    f"Package: {n}\nStatus: install ok installed\nArchitecture: amd64\nVersion: "
                    f"{ctx.host.packages[n]}\n"
                )
            else:
                ctx.eprint(f"dpkg-query: package '{n}' is not installed and no information is available")
                status = 1
        return status
    if action in ("-L", "--listfiles"):
        for n in rest:
            pkg = _known(ctx, n)
            if pkg is None or n not in ctx.host.packages:
                raise CommandFailed(f"dpkg-query: package '{n}' is not installed", 1)
            for path, _ in pkg.bins:
                ctx.print(path)
        return 0
    raise CommandFailed(f"dpkg: error: unknown option {action}\n\nType dpkg --help for help.", 2)


def _matching(ctx: Ctx, patterns: list[str]) -> list[str]:
    return [n for n in sorted(ctx.host.packages) if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


@command("dpkg-query")
async def dpkg_query(ctx: Ctx) -> int:
    args = list(ctx.args)
    fmt = "${Package}\t${Version}\n"
    names: list[str] = []
    show = False
    while args:
        a = args.pop(0)
        if a in ("-W", "--show"):
            show = True
        elif a in ("-f", "--showformat") and args:
            fmt = args.pop(0)
        elif a.startswith("--showformat="):
            fmt = a.split("=", 1)[1]
        elif a.startswith("-f") and len(a) > 2:
            fmt = a[2:]
        elif a in ("-l", "--list"):
            ctx.argv[1:] = ["-l", *args]
            return await dpkg(ctx)
        elif a in ("-s", "--status"):
            ctx.argv[1:] = ["-s", *args]
            return await dpkg(ctx)
        else:
            names.append(a)
    if not show:
        raise CommandFailed(
            "dpkg-query: error: need an action option\n\nUse --help for help about querying packages.", 2
        )
    status = 0
    selected: list[str] = []
    if not names:
        selected = sorted(ctx.host.packages)
    for n in names:
        hits = _matching(ctx, [n])
        if not hits:
            ctx.eprint(f"dpkg-query: no packages found matching {n}")
            status = 1
        selected += [h for h in hits if h not in selected]
    for n in selected:
        ctx.out.write(_format(fmt, n, ctx.host.packages[n]))
    return status


def _format(fmt: str, name: str, version: str) -> str:
    fields = {
        "Package": name,
        "Version": version,
        "Status": "install ok installed",
        "db:Status-Abbrev": "ii ",
        "db:Status-Status": "installed",
        "Architecture": "amd64",
        "binary:Package": f"{name}:amd64",
    }
    text = re.sub(r"\$\{([^}:;]+(?::[^};]+)?)(?:;-?\d+)?\}", lambda m: fields.get(m.group(1), ""), fmt)
    return text.replace("\\n", "\n").replace("\\t", "\t")


def _known(ctx: Ctx, name: str) -> db.Pkg | None:
    for repo in ("doca", "ubuntu", "cuda"):
        pkg = db.catalog(repo, ctx.host).get(name)
        if pkg is not None and (repo != "doca" or ctx.host.packages.get(name) == pkg.version):
            return pkg
    return db.doca_host_pkg(ctx.host.packages[name]) if name == "doca-host" and name in ctx.host.packages else None


def _drop(ctx: Ctx, name: str) -> None:
    if gpudirect_dkms.is_nvidia_dkms(name):
        gpudirect_dkms.remove(ctx.host)  # the package's prerm: dkms remove nvidia/<version> --all
    pkg = _known(ctx, name)
    if pkg is not None:
        db.remove_files(ctx.host, pkg)
    ctx.host.packages.pop(name, None)


@command("gpg")
async def gpg(ctx: Ctx) -> int:
    args = list(ctx.args)
    out_path = None
    inputs = []
    while args:
        a = args.pop(0)
        if a in ("-o", "--output") and args:
            out_path = args.pop(0)
        elif not a.startswith("-"):
            inputs.append(a)
    if "--dearmor" not in ctx.args:
        raise CommandFailed("gpg: the simulated host only supports --dearmor", 2)
    try:
        text = ctx.read_text(inputs[0]) if inputs else await ctx.stdin.read()
    except FsError as exc:
        raise CommandFailed(f"gpg: can't open '{inputs[0]}': {exc.reason}", 2) from None
    if "BEGIN PGP PUBLIC KEY BLOCK" not in text:
        raise CommandFailed("gpg: no valid OpenPGP data found.", 2)
    data = b"\x99\x01\x0d\x04roce-wizard-lab-dearmored-key\n"
    if out_path is None or out_path == "-":
        ctx.out.write(data.decode(errors="replace"))
        return 0
    try:
        ctx.fs.write_bytes(out_path, data, ctx.cred, ctx.cwd)
    except FsError as exc:
        raise CommandFailed(f"gpg: can't create '{out_path}': {exc.reason}", 2) from None
    return 0


@command("ofed_uninstall")
async def ofed_uninstall(ctx: Ctx) -> int:
    """/usr/sbin/ofed_uninstall.sh --force: removes the DOCA/MLNX_OFED packages (the driver stays until reboot)."""
    if not ctx.root:
        raise CommandFailed("Only root can run ofed_uninstall.sh", 1)
    doca = {p.name for p in db.doca_catalog(next((r for r in db.DOCA_RELEASES if r == ctx.host.doca_repo), "2.9.1"))}
    gone = [n for n in sorted(ctx.host.packages) if n in doca or n == "doca-host" or "mlnx" in ctx.host.packages[n]]
    ctx.print("This program will uninstall all OFED packages on your machine.")
    for n in gone:
        ctx.print(f"Removing {n} ({ctx.host.packages[n]}) ...")
        _drop(ctx, n)
    ctx.print("Uninstall finished successfully")
    return 0


DESCRIPTIONS = {
    "ibverbs-utils": "Examples for the libibverbs library",
    "infiniband-diags": "InfiniBand diagnostic programs",
    "perftest": "Infiniband verbs performance tests",
    "rdma-core": "RDMA core userspace infrastructure and documentation",
    "doca-ofed": "DOCA OFED meta package",
    "chrony": "Versatile implementation of the Network Time Protocol",
}
