"""Simulated tools the nccl stage needs: git clone of nccl-tests, make, nvcc, ldd, ssh between hosts, torchrun."""

from __future__ import annotations

import asyncio
import dataclasses
import posixpath
from dataclasses import dataclass, field

from wizard.engine.clock import window_scale
from wizard.lab import nccl_sim as sim
from wizard.lab import packages
from wizard.lab.cmd_nccl import binary_kind, find_host
from wizard.lab.commands import REGISTRY, Handler
from wizard.lab.shell.interp import MARKER
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import FsError

NCCL_TESTS_URL = "https://github.com/NVIDIA/nccl-tests.git"
PERF_BINARIES = ("all_reduce", "all_gather", "broadcast", "reduce_scatter", "reduce", "alltoall", "sendrecv")
NVCC_VERSION = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Thu_Mar_28_02:18:24_PDT_2024
Cuda compilation tools, release 12.4, V12.4.131
Build cuda_12.4.r12.4/compiler.34097967_0"""

# The build needs make (build-essential), git and nvcc (CUDA repository, matching libnccl2's +cuda12.4 build).
for _i, _pkg in enumerate(packages.UBUNTU):
    _bins = {"build-essential": (("/usr/bin/make", "make"),), "git": (("/usr/bin/git", "git"),)}.get(_pkg.name)
    if _bins and not _pkg.bins:
        packages.UBUNTU[_i] = dataclasses.replace(_pkg, bins=_bins)
if all(p.name != "cuda-nvcc-12-4" for p in packages.CUDA):
    packages.CUDA += [
        packages.Pkg(
            "cuda-nvcc-12-4",
            "12.4.131-1",
            repo="cuda",
            size_kb=120000,
            bins=(("/usr/local/cuda-12.4/bin/nvcc", "nvcc"),),
        ),
        packages.Pkg(
            "cuda-cudart-dev-12-4",
            "12.4.127-1",
            repo="cuda",
            size_kb=3000,
            files=(("/usr/local/cuda-12.4/include/cuda_runtime.h", "/* simulated */\n", 0o644),),
        ),
    ]


def tool(*names: str):  # noqa: ANN201 - decorator
    """Register a handler unless another module of the lab already simulates that tool."""

    def deco(fn: Handler) -> Handler:
        for name in names:
            REGISTRY.setdefault(name, fn)
        return fn

    return deco


def _write(ctx: Ctx, path: str, data: bytes | str, mode: int = 0o644) -> None:
    raw = data.encode() if isinstance(data, str) else data
    try:
        ctx.host.fs.mkdir(posixpath.dirname(path), ctx.cred, parents=True)
        ctx.host.fs.write_bytes(path, raw, ctx.cred, mode=mode)
    except FsError as exc:
        raise CommandFailed(f"{ctx.name}: {ctx.fs_error(exc, path)}", 1) from None


@tool("git")
async def git(ctx: Ctx) -> int:
    args = ctx.args
    if args[:1] != ["clone"]:
        raise CommandFailed("git: only 'git clone' is simulated", 1)
    branch = args[args.index("--branch") + 1] if "--branch" in args else None
    plain = [
        a for i, a in enumerate(args[1:], 1) if not a.startswith("-") and args[i - 1] not in ("--branch", "--depth")
    ]
    url, dest = plain[0], plain[1] if len(plain) > 1 else posixpath.basename(plain[0]).removesuffix(".git")
    dest = ctx.path(dest)
    if ctx.host.fs.exists(dest) and ctx.host.fs.listdir(dest):
        raise CommandFailed(f"fatal: destination path '{dest}' already exists and is not an empty directory.", 128)
    if url != NCCL_TESTS_URL:
        raise CommandFailed(f"fatal: unable to access '{url}': Could not resolve host", 128)
    if branch and not branch.startswith("v2."):
        raise CommandFailed(
            f"warning: Could not find remote branch {branch} to clone.\n"
            f"fatal: Remote branch {branch} not found in upstream origin",
            128,
        )
    ctx.eprint(f"Cloning into '{dest}'...")
    await asyncio.sleep(0.3 * ctx.host.time_scale)
    _write(ctx, f"{dest}/Makefile", "# simulated nccl-tests top-level Makefile\nBUILDDIR ?= build\n")
    _write(ctx, f"{dest}/src/Makefile", "# simulated nccl-tests src/Makefile\n")
    _write(ctx, f"{dest}/src/common.mk", "CUDA_HOME ?= /usr/local/cuda\n")
    for name in PERF_BINARIES:
        _write(ctx, f"{dest}/src/{name}.cu", f"/* simulated {name}.cu */\n")
    return 0


@tool("make")
async def make(ctx: Ctx) -> int:
    args = ctx.args
    src = ctx.path(args[args.index("-C") + 1]) if "-C" in args else ctx.cwd
    var = dict(a.split("=", 1) for a in args if "=" in a and not a.startswith("-"))
    if not ctx.host.fs.exists(f"{src}/Makefile"):
        raise CommandFailed(f"make: *** {src}: No such file or directory.  Stop.", 2)
    cuda = var.get("CUDA_HOME", "/usr/local/cuda")
    build = var.get("BUILDDIR", f"{src}/build")
    ctx.print(f"make[1]: Entering directory '{src}/src'")
    if not ctx.host.fs.exists(f"{cuda}/bin/nvcc"):
        raise CommandFailed(
            f"/bin/sh: 1: {cuda}/bin/nvcc: not found\nmake[1]: *** [Makefile:60: {build}/"
            "timer.o] Error 127\nmake: *** [Makefile:20: src.build] Error 2",
            2,
        )
    missing = []
    nccl_home = var.get("NCCL_HOME", "/usr")
    if "libnccl-dev" not in ctx.host.packages and not ctx.host.fs.exists(f"{nccl_home}/include/nccl.h"):
        missing.append("nccl.h")
    if var.get("MPI") == "1" and "libopenmpi-dev" not in ctx.host.packages:
        missing.append("mpi.h")
    if missing:
        raise CommandFailed(
            f"common.h:10:10: fatal error: {missing[0]}: No such file or directory\ncompilation "
            f"terminated.\nmake[1]: *** [Makefile:64: {build}/common.o] Error 1",
            2,
        )
    mpi = var.get("MPI") == "1"
    for name in PERF_BINARIES:
        ctx.print(f"Compiling  {name}.cu{' ' * (28 - len(name))}> {build}/{name}.o")
        await asyncio.sleep(0.05 * ctx.host.time_scale)
    for name in PERF_BINARIES:
        ctx.print(f"Linking  {build}/{name}.o > {build}/{name}_perf")
        _write(ctx, f"{build}/{name}_perf", MARKER + f"{name}_perf\nmpi={int(mpi)}\n".encode(), 0o755)
    ctx.print(f"make[1]: Leaving directory '{src}/src'")
    return 0


@tool("nvcc")
async def nvcc(ctx: Ctx) -> int:
    if "--version" in ctx.args or "-V" in ctx.args:
        ctx.print(NVCC_VERSION)
        return 0
    raise CommandFailed("nvcc fatal   : No input files specified; use option --help for more information", 1)


@tool("ldd")
async def ldd(ctx: Ctx) -> int:
    status = 0
    for path in ctx.args:
        if not ctx.host.fs.exists(ctx.path(path)):
            ctx.eprint(f"ldd: {path}: No such file or directory")
            status = 1
            continue
        kind = binary_kind(ctx.host, ctx.path(path))
        if kind is None:
            ctx.print("\tnot a dynamic executable")
            status = 1
            continue
        arch = "/usr/lib/x86_64-linux-gnu"
        libs = [("linux-vdso.so.1", None)]
        if kind == "mpi":
            libs.append(("libmpi.so.40", f"{arch}/libmpi.so.40"))
        libs.append(("libnccl.so.2", f"{arch}/libnccl.so.2" if "libnccl2" in ctx.host.packages else "not found"))
        libs += [("libcudart.so.12", "/usr/local/cuda-12.4/lib64/libcudart.so.12"), ("libc.so.6", f"{arch}/libc.so.6")]
        for n, (lib, target) in enumerate(libs):
            address = f"(0x00007f{0x3A000000 + n * 0x21000:08x})"
            ctx.print(
                f"\t{lib} {address}"
                if target is None
                else f"\t{lib} => {target}" + ("" if target == "not found" else f" {address}")
            )
    return status


@tool("ssh")
async def ssh(ctx: Ctx) -> int:
    """Host-to-host ssh inside the lab: the operator's key is assumed installed (what mpirun needs)."""
    args, i, rest = ctx.args, 0, []
    while i < len(args):
        if args[i] in ("-o", "-p", "-i", "-l"):
            i += 2
        elif args[i].startswith("-"):
            i += 1
        else:
            rest = args[i:]
            break
    if not rest:
        raise CommandFailed("usage: ssh [-46AaCfGgKkMNnqsTtVvXxYy] destination [command [argument ...]]", 255)
    target = find_host(ctx.host, rest[0].split("@")[-1])
    if target is None or target.fault("unreachable"):
        raise CommandFailed(f"ssh: connect to host {rest[0]} port 22: No route to host", 255)
    command = rest[1:] or ["true"]
    if command != ["true"]:
        raise CommandFailed("ssh: the lab runs only 'true' on another host", 255)
    return 0


@dataclass
class Rendezvous:
    """torchrun's c10d rendezvous on the master address: every node must join before training starts."""

    nnodes: int
    joined: dict[int, object] = field(default_factory=dict)
    ready: asyncio.Event = field(default_factory=asyncio.Event)


RENDEZVOUS: dict[tuple[int, str, str], Rendezvous] = {}


@tool("torchrun")
async def torchrun(ctx: Ctx) -> int:
    args = ctx.args
    if "--help" in args or "-h" in args:
        ctx.print("usage: torchrun [-h] [--nnodes NNODES] [--nproc-per-node NPROC_PER_NODE] ... training_script ...")
        return 0
    opt = {args[i].lstrip("-").replace("_", "-"): args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    script = args[-1]
    if not ctx.host.fs.exists(ctx.path(script)):
        raise CommandFailed(f"/usr/bin/python3: can't open file '{script}': [Errno 2] No such file or directory", 2)
    nnodes, rank = int(opt.get("nnodes", "1")), int(opt.get("node-rank", "0"))
    master, port = opt.get("master-addr", "127.0.0.1"), opt.get("master-port", "29500")
    key = (id(ctx.host.lab), master, port)
    rdzv = RENDEZVOUS.setdefault(key, Rendezvous(nnodes))
    rdzv.joined[rank] = ctx.host
    if len(rdzv.joined) >= nnodes:
        rdzv.ready.set()
    try:
        await asyncio.wait_for(rdzv.ready.wait(), 60 * window_scale(ctx.host.time_scale))
    except TimeoutError:
        RENDEZVOUS.pop(key, None)
        raise CommandFailed(
            f"torch.distributed.DistStoreError: Timed out after 61 seconds waiting for clients. "
            f"{len(rdzv.joined)}/{nnodes} clients joined.",
            1,
        ) from None
    hosts = [rdzv.joined[r] for r in sorted(rdzv.joined)]
    views = [sim.host_view(h, ctx.env, ctx.cred.user) for h in hosts]  # type: ignore[arg-type]
    job = sim.plan_job(views)
    gpus = int(opt.get("nproc-per-node", "1"))
    me = views[rank]
    ctx.print(sim.SIMULATED)
    if ctx.env.get("NCCL_DEBUG", "").upper() == "INFO":
        for line in sim.info_lines(me, job, rank * gpus, gpus * nnodes, 52000 + rank * 131):
            ctx.print(line)
    await asyncio.sleep(1.0 * ctx.host.time_scale)
    if rank == 0:
        RENDEZVOUS.pop(key, None)
    if job.failure:
        raise CommandFailed(
            f"torch.distributed.DistBackendError: NCCL error: unhandled system error, NCCL version {me.version}", 1
        )
    if rank == 0:
        world = gpus * nnodes
        busbw = job.busbw * 0.97
        algbw = busbw * world / (2 * (world - 1)) if world > 1 else busbw
        seconds = (1 << 30) / (algbw * 1e9)
        ctx.print(
            f"roce-wizard-allreduce: world={world} bytes={1 << 30} time_us={seconds * 1e6:.1f} "
            f"algbw_gbytes={algbw:.2f} busbw_gbytes={busbw:.2f} correct=True"
        )
    return 0
