"""Simulated inference stack, part 1: python3 -m venv, pip/uv into a venv (engines: part 2, HTTP: cmd_http.py)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import secrets
from collections.abc import Awaitable, Callable

from wizard.lab import (
    cmd_hf,  # noqa: F401 - registers the `hf` command
    cmd_http,  # noqa: F401 - registers `curl` (engine APIs, nginx) and `nginx`
    packages,
)
from wizard.lab import cmd_inference_engines as engines
from wizard.lab import commands as commands_pkg
from wizard.lab import inference_sim as st
from wizard.lab.commands import REGISTRY, command
from wizard.lab.shell.interp import MARKER
from wizard.lab.streams import CommandFailed, Ctx

SIM = st.SIM
if all(p.name != "python3-venv" for p in packages.UBUNTU):
    packages.UBUNTU.append(packages.Pkg("python3-venv", "3.10.6-1~22.04.1", size_kb=8, depends=("python3",)))
# Ubuntu server installs openssl by default (priority important); the wizard generates the API key with it.
if all(p.name != "openssl" for p in packages.BASE):
    packages.BASE.append(packages.Pkg("openssl", "3.0.2-0ubuntu1.18", bins=(("/usr/bin/openssl", "openssl"),)))


def _base_handlers() -> dict[str, Callable[[Ctx], Awaitable[int]]]:
    """The lab's own python3, loaded first whatever the import order: this module wraps it."""
    for info in pkgutil.iter_modules(commands_pkg.__path__):
        importlib.import_module(f"{commands_pkg.__name__}.{info.name}")
    return {n: REGISTRY[n] for n in ("python3",)}


_original = _base_handlers()
_BINS = {
    "vllm": ("vllm", "sim-vllm"),
    "ray": ("ray", "sim-ray"),
    "uv": ("uv", "sim-uv"),
    "huggingface-hub": ("hf", "sim-hf"),
}
_SPEC = re.compile(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(==|>=|~=)?\s*([0-9][0-9A-Za-z.+-]*)?$")


# -- python3 -m venv, the venv's python, pip and uv -----------------------------------------------------------------


@command("python3")
async def python3(ctx: Ctx) -> int:
    if ctx.args[:2] != ["-m", "venv"] or len(ctx.args) != 3:
        return await _original["python3"](ctx)
    target = ctx.path(ctx.args[2])
    if "python3-venv" not in ctx.host.packages:
        raise CommandFailed(
            "The virtual environment was not created successfully because ensurepip is not\navailable.  On Debian/"
            "Ubuntu systems, you need to install the python3-venv\npackage using the following command.\n\n"
            "    apt install python3.10-venv\n"
        )
    for name in ("python", "python3", "python3.10"):
        ctx.fs.install(f"{target}/bin/{name}", MARKER + b"sim-venv-python\n", 0o755)
    ctx.fs.install(f"{target}/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.10.12\n")
    _dist(ctx, target, "pip", st.LATEST["pip"])
    return 0


def _dist(ctx: Ctx, venv: str, name: str, version: str) -> None:
    site = st.site_packages(venv)
    old = st.installed(ctx.host, venv).get(name)
    if old is not None:
        ctx.fs.remove(f"{site}/{name}-{old}.dist-info", recursive=True)
    ctx.fs.install(f"{site}/{name}-{version}.dist-info/METADATA", f"Name: {name}\nVersion: {version}\n")
    if name in _BINS:
        binary, tool = _BINS[name]
        ctx.fs.install(f"{venv}/bin/{binary}", MARKER + tool.encode() + b"\n", 0o755)


_VALUED = ("--index-url", "-i", "--extra-index-url", "--python", "-c", "--constraint", "-r", "--requirement")


def split_pip_args(args: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """pip/uv install arguments -> (requirement specs, {option: values}) for the options that take a value."""
    specs: list[str] = []
    opts: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        key, eq, value = arg.partition("=")
        if key in _VALUED:
            if not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            opts.setdefault(key, []).append(value)
        elif not arg.startswith("-"):
            specs.append(arg)
        i += 1
    return specs, opts


def _install(ctx: Ctx, venv: str, specs: list[str], opts: dict[str, list[str]] | None = None) -> int:
    if not ctx.root and not ctx.fs.exists(venv):
        raise CommandFailed(f"ERROR: Could not install packages due to an OSError: Permission denied: '{venv}'")
    extra = (opts or {}).get("--extra-index-url", [])
    done = []
    for spec in specs:
        match = _SPEC.match(spec.strip())
        if not match:
            raise CommandFailed(f"ERROR: Invalid requirement: '{spec}'")
        name, _, op, version = match.groups()
        name = name.lower()
        chosen = version if op == "==" else st.LATEST.get(name, "1.0.0")
        if op == ">=" and st.version_tuple(chosen) < st.version_tuple(version or "0"):
            raise CommandFailed(f"ERROR: No matching distribution found for {spec}")
        cuda = chosen.partition("+")[2]
        # PyPI hosts no local versions: vllm==X+cu129 comes only from https://wheels.vllm.ai/X/cu129 (vLLM docs),
        # torch==Y+cu129 from PyTorch's https://download.pytorch.org/whl/cu129.
        where = f"/whl/{cuda}" if name == "torch" else f"{chosen.partition('+')[0]}/{cuda}"
        if cuda and not any(url.rstrip("/").endswith(where) for url in extra):
            raise CommandFailed(
                f"ERROR: Could not find a version that satisfies the requirement {spec}\n"
                f"ERROR: No matching distribution found for {spec}"
            )
        _dist(ctx, venv, name, chosen)
        done.append(f"{name}-{chosen}")
        if name in ("vllm", "sglang"):
            torch = st.torch_for(name, chosen)
            if cuda and any(url.rstrip("/").endswith(f"/whl/{cuda}") for url in extra):
                torch = f"{torch}+{cuda}"  # PyTorch's own index for that CUDA build
            _dist(ctx, venv, "torch", torch)
            _dist(ctx, venv, "huggingface-hub", st.LATEST["huggingface-hub"])  # a dependency of both engines
            done += [f"torch-{torch}", f"huggingface-hub-{st.LATEST['huggingface-hub']}"]
    ctx.print(f"Successfully installed {' '.join(done)}  # simulated download")
    return 0


@command("sim-venv-python")
async def venv_python(ctx: Ctx) -> int:
    venv = st.venv_of(ctx)
    args = ctx.args
    if args in (["--version"], ["-V"]):
        ctx.print("Python 3.10.12")
        return 0
    if args[:2] == ["-m", "pip"] and len(args) > 2:
        rest, opts = split_pip_args(args[3:])
        if args[2] == "install":
            for path in opts.get("-r", []) + opts.get("--requirement", []):
                lines = ctx.fs.read_text(ctx.path(path)).splitlines()
                rest += [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]
            return _install(ctx, venv, rest, opts)
        if args[2] == "freeze":  # pip freeze leaves pip itself out (and setuptools, wheel)
            for name, version in sorted(st.installed(ctx.host, venv).items()):
                if name not in ("pip", "setuptools", "wheel"):
                    ctx.print(f"{name}=={version}")
            return 0
        if args[2:4] == ["index", "versions"] and rest:
            latest = st.LATEST.get(rest[-1].lower())
            if latest is None:
                raise CommandFailed(f"ERROR: No matching distribution found for {rest[-1]}")
            ctx.print(f"WARNING: pip index is currently an experimental command.\n{rest[-1]} ({latest})")
            ctx.print(f"Available versions: {latest}, 0.11.0, 0.6.3  # simulated index")
            return 0
        if args[2] == "list" and "--format=json" in args:
            rows = [{"name": n, "version": v} for n, v in sorted(st.installed(ctx.host, venv).items())]
            ctx.print(json.dumps(rows))
            return 0
        raise CommandFailed(f"pip {args[2]}: not simulated {SIM}")
    if args and args[0].endswith(".py") and _is_wait_script(ctx, args[0]):
        return await engines.wait_for_gpus(ctx, args[1:])
    if args[:2] == ["-m", "sglang.launch_server"]:
        if "sglang" not in st.installed(ctx.host, venv):
            raise CommandFailed(f"{ctx.argv[0]}: No module named sglang")
        return await engines.engine(ctx, "sglang", args[2:])
    raise CommandFailed(f"{ctx.argv[0]}: only --version, -m pip and -m sglang.launch_server are simulated")


@command("sim-uv")
async def uv(ctx: Ctx) -> int:
    args = list(ctx.args)
    if args[:2] != ["pip", "install"] or "--python" not in args:
        raise CommandFailed(f"uv: only `uv pip install --python PY ...` is simulated {SIM}")
    specs, opts = split_pip_args(args[2:])
    python = opts["--python"][-1]
    return _install(ctx, python.rsplit("/bin/", 1)[0], specs, opts)


def _is_wait_script(ctx: Ctx, path: str) -> bool:
    """The wizard's ExecStartPre= helper (assets/inference/ray-wait-gpus.py), recognised by its first line."""
    try:
        head = ctx.fs.read_text(path, ctx.cred, ctx.cwd).splitlines()[:1]
    except Exception:  # noqa: BLE001 - a missing script is python's own error
        missing = f"{ctx.argv[0]}: can't open file '{path}': [Errno 2] No such file or directory"
        raise CommandFailed(missing, 2) from None
    return bool(head) and "wait until the Ray cluster holds the serving group's GPUs" in head[0]


@command("openssl")
async def openssl(ctx: Ctx) -> int:
    """`openssl rand -hex N` only (openssl-rand(1)): N random bytes printed as 2N hex digits."""
    args = ctx.args
    if len(args) != 3 or args[:2] != ["rand", "-hex"] or not args[2].isdigit():
        raise CommandFailed(f"openssl: only `openssl rand -hex N` is simulated {SIM}")
    ctx.print(secrets.token_hex(int(args[2])))
    return 0
