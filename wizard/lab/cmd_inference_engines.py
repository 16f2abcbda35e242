"""Simulated Ray (head/worker, token auth), `vllm serve` (Ray or mp backend) and SGLang's launch_server ranks.

Each runs as a long-lived program under its systemd unit and starts only when the unit's environment carries correct
fabric facts (NCCL/Gloo interfaces, RoCE HCAs with IPv4 RoCE v2 GIDs, unlimited memlock); errors are labelled simulated.
"""

from __future__ import annotations

import asyncio
import time

from wizard.lab import cmd_hf
from wizard.lab import inference_sim as st
from wizard.lab.commands import command
from wizard.lab.streams import CommandFailed, Ctx

SIM = st.SIM
_vt = st.version_tuple

# -- ray ----------------------------------------------------------------------------------------------------------


def _flags(args: list[str]) -> dict[str, str]:
    out = {}
    for a in args:
        key, _, value = a.partition("=")
        out[key] = value or "true"
    return out


def _token(ctx: Ctx, env: dict[str, str], version: str) -> str | None:
    if env.get("RAY_AUTH_MODE") != "token" or _vt(version) < (2, 52):
        return None  # older Ray ignores RAY_AUTH_MODE: no authentication at all
    if env.get("RAY_AUTH_TOKEN"):
        return env["RAY_AUTH_TOKEN"]
    path = env.get("RAY_AUTH_TOKEN_PATH") or "/root/.ray/auth_token"
    try:
        token = ctx.fs.read_text(path).strip()
    except Exception:  # noqa: BLE001 - any unreadable token file is the same fatal error in Ray
        token = ""
    if not token:
        raise CommandFailed(
            "RuntimeError: Token authentication is enabled but no authentication token was found. Please provide an"
            " authentication token using one of these methods:\n  1. Set the RAY_AUTH_TOKEN environment variable\n"
            "  2. Set the RAY_AUTH_TOKEN_PATH environment variable (pointing to a token file)\n"
            "  3. Create a token file at the default location: ~/.ray/auth_token"
        )
    return token


async def _park(proc: st.Proc, block: bool) -> int:
    """Stay 'running' while the unit run lives; never return after it ends (systemd already moved on)."""
    if not block:
        return 0
    while proc.alive():
        await asyncio.sleep(0.1)
    await asyncio.Event().wait()
    return 0


@command("sim-ray")
async def ray(ctx: Ctx) -> int:
    venv = st.venv_of(ctx)
    version = st.installed(ctx.host, venv).get("ray", "0")
    args = ctx.args
    if args[:1] == ["--version"]:
        ctx.print(f"ray, version {version}")
        return 0
    if args[:1] == ["stop"]:
        for head in st.world(ctx.host).ray.values():
            for proc in [head.proc] + [n[0] for n in head.nodes.values()]:
                proc.stopped |= proc.host is ctx.host and proc.unit is None
        ctx.print("Stopped all 1 Ray processes.")
        return 0
    if args[:1] != ["start"]:
        raise CommandFailed(f"ray {' '.join(args[:1])}: not simulated {SIM}")
    flags = _flags(args[1:])
    unit, pid, env, memlock = st.unit_context(ctx)
    proc = st.Proc(ctx.host, unit, pid, env, memlock)
    ip = flags.get("--node-ip-address") or str(ctx.host.mgmt.ip)
    if not st.host_has_ip(ctx.host, ip):
        raise CommandFailed(f"ValueError: --node-ip-address {ip} is not an address of this node {SIM}")
    token = _token(ctx, env, version)
    gpus = len(ctx.host.profile.gpus) if "nvidia" in ctx.host.modules else 0
    w = st.world(ctx.host)
    if "--head" in flags:
        port = flags.get("--port", "6379")
        if flags.get("--dashboard-host") == "0.0.0.0":
            ctx.eprint(f"WARNING: the Ray dashboard listens on all interfaces {SIM}")
        head = st.RayHead(proc, ip, version, token)
        head.nodes[ctx.host.name] = (proc, ip, gpus)
        w.ray[f"{ip}:{port}"] = head
        ctx.print(f"Local node IP: {ip}\n--------------------\nRay runtime started.\n--------------------  {SIM}")
        return await _park(proc, "--block" in flags)
    address = flags.get("--address", "")
    deadline = time.monotonic() + st.wait_s(ctx.host)
    while True:
        head = w.ray.get(address)
        if head is not None and head.proc.alive():
            break
        if time.monotonic() > deadline:
            raise CommandFailed(f"ConnectionError: Could not find any running Ray instance at {address} {SIM}")
        await asyncio.sleep(0.1)
    if head.version != version:
        raise CommandFailed(
            f"RuntimeError: Version mismatch: The cluster was started with:\n    Ray: {head.version}\n"
            f"This process on node {ip} was started with:\n    Ray: {version}"
        )
    if head.token is not None and token != head.token:
        raise CommandFailed(f"ray.exceptions.AuthenticationError: invalid or missing authentication token {SIM}")
    head.nodes[ctx.host.name] = (proc, ip, gpus)
    ctx.print(f"Local node IP: {ip}\n--------------------\nRay runtime started.\n--------------------  {SIM}")
    if "--block" not in flags:
        return 0
    while proc.alive():
        await asyncio.sleep(0.1)
        if not head.proc.alive():
            head = await _rejoin(ctx, proc, address, head, (proc, ip, gpus))
    await asyncio.Event().wait()
    return 0


async def _rejoin(ctx: Ctx, proc: st.Proc, address: str, old: st.RayHead, node: tuple) -> st.RayHead:
    """The head went away: the raylet dies, and Restart=on-failure brings `ray start` back to the new head."""
    unit = st.sd.find_unit(ctx.host, proc.unit) if proc.unit else None
    if unit is None or unit.get("Service", "Restart", "no") not in ("on-failure", "always"):
        return old
    new = st.world(ctx.host).ray.get(address)
    if new is None or new is old or not new.proc.alive() or new.version != old.version or new.token != old.token:
        return old
    ctx.print(
        f"raylet lost its GCS at {address}; systemd restarted the unit (Restart=on-failure) and it rejoined {SIM}"
    )
    new.nodes[ctx.host.name] = node
    return new


# -- vLLM and SGLang ------------------------------------------------------------------------------------------------

_VLLM_VALUE = {"--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp", "--distributed-executor-backend",
               "--nnodes", "--node-rank", "--master-addr", "--master-port", "--host", "--port", "--max-model-len",
               "--gpu-memory-utilization", "--quantization", "--served-model-name", "--dtype", "--api-key"}  # fmt: skip
_SGLANG_VALUE = {"--model-path", "--model", "--tp-size", "--tp", "--tensor-parallel-size", "--pp-size",
                 "--pipeline-parallel-size", "--dist-init-addr", "--nnodes", "--node-rank", "--host", "--port",
                 "--context-length", "--quantization", "--mem-fraction-static", "--api-key", "--dtype"}  # fmt: skip


def _parse(prog: str, args: list[str], valued: set[str], switches: set[str]) -> dict[str, str]:
    opts: dict[str, str] = {}
    bad = []
    i = 0
    while i < len(args):
        a = args[i]
        key, eq, value = a.partition("=")
        if key in valued:
            if not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            opts[key] = value
        elif a in switches:
            opts[a] = "true"
        elif not a.startswith("-") and "model" not in opts:
            opts["model"] = a
        else:
            bad.append(a)
        i += 1
    if bad:
        raise CommandFailed(f"usage: {prog} [options]\n{prog}: error: unrecognized arguments: {' '.join(bad)}", 2)
    return opts


@command("sim-vllm")
async def vllm(ctx: Ctx) -> int:
    if ctx.args[:1] != ["serve"]:
        raise CommandFailed(f"vllm {' '.join(ctx.args[:1])}: only `vllm serve` is simulated {SIM}")
    return await engine(ctx, "vllm", ctx.args[1:])


async def engine(ctx: Ctx, engine: str, args: list[str]) -> int:
    if engine == "vllm":
        o = _parse("vllm serve", args, _VLLM_VALUE, {"--headless", "--enforce-eager"})
        model = o.get("model", "")
        tp, pp = int(o.get("--tensor-parallel-size", "1")), int(o.get("--pipeline-parallel-size", "1"))
        backend, util = o.get("--distributed-executor-backend", "mp"), float(o.get("--gpu-memory-utilization", "0.9"))
        nnodes, rank, rendezvous = (
            int(o.get("--nnodes", "1")),
            int(o.get("--node-rank", "0")),
            (f"{o.get('--master-addr', '127.0.0.1')}:{o.get('--master-port', '29501')}"),
        )
        headless = "--headless" in o
    else:
        o = _parse("launch_server.py", args, _SGLANG_VALUE, set())
        model = o.get("--model-path") or o.get("--model", "")
        tp, pp = int(o.get("--tp-size") or o.get("--tp") or "1"), int(o.get("--pp-size", "1"))
        backend, util, headless = "torch", 0.88, int(o.get("--node-rank", "0")) != 0
        nnodes, rank, rendezvous = (
            int(o.get("--nnodes", "1")),
            int(o.get("--node-rank", "0")),
            o.get("--dist-init-addr", "127.0.0.1:29500"),
        )
    unit, pid, env, memlock = st.unit_context(ctx)
    proc = st.Proc(ctx.host, unit, pid, env, memlock)
    too_old = st.cuda_init_error(ctx.host, engine, st.installed(ctx.host, st.venv_of(ctx)))
    if too_old:
        raise CommandFailed(too_old)
    no_bf16 = st.bf16_error(ctx.host, model, o.get("--dtype"))
    if no_bf16:
        raise CommandFailed(no_bf16)
    errors = st.fabric_errors(ctx.host, env, memlock, vllm=engine == "vllm")
    if errors:
        raise CommandFailed("\n".join(errors))
    placed: dict[str, st.Proc] = {}
    if backend == "ray":
        placed = await _ray_group(ctx, env, tp * pp)
    elif nnodes > 1:
        await _rendezvous(ctx, proc, rendezvous, rank, nnodes)
    torch = st.installed(ctx.host, st.venv_of(ctx)).get("torch", st.LATEST["torch"])
    for line in st.nccl_init_lines(ctx.host, env, torch, proc.pid):
        ctx.print(line)
    copied = st.carried_over(ctx.host, env) if backend == "ray" else {}
    for raylet in placed.values():
        if raylet.host is not ctx.host:
            worker_env = {**raylet.env, **copied, "NCCL_DEBUG": env.get("NCCL_DEBUG", "")}
            for line in st.nccl_init_lines(raylet.host, worker_env, torch, raylet.pid + 40):
                ctx.print(f"(RayWorkerWrapper pid={raylet.pid + 40}, ip={raylet.host.mgmt.ip}) {line}")
    if not cmd_hf.cached(ctx, env, model):
        ctx.print(f"Downloading the weights of {model}: nothing in the cache yet {SIM}")
        await cmd_hf.download(ctx, env, model)
    oom = st.out_of_memory(ctx.host, model, tp * pp, util)
    if oom:
        raise CommandFailed(oom)
    if headless:
        ctx.print(f"node rank {rank}: engine workers running {SIM}")
        return await _park(proc, True)
    params = st.MODEL_SIZES.get(model, (8.0, 2))[0]
    port = int(o.get("--port", "8000" if engine == "vllm" else "30000"))
    # vLLM: `--api-key` or the environment variable VLLM_API_KEY (vLLM docs, "OpenAI-Compatible Server", API key);
    # SGLang: `--api-key` only (docs.sglang.io "Server Arguments"). The key guards /v1/*; /health stays open.
    key = o.get("--api-key") or (env.get("VLLM_API_KEY") if engine == "vllm" else None) or None
    if engine == "sglang":
        # SGLang logs every server argument at start, the key included (sglang/srt/entrypoints/engine.py:
        # logger.info(f"{server_args=}")).
        ctx.print(f"server_args=ServerArgs(model_path='{model}', tp_size={tp}, host='{o.get('--host', '127.0.0.1')}',"
                  f" port={o.get('--port', '30000')}, api_key={key!r}, ...) {SIM}")  # fmt: skip
    ep = st.Endpoint(proc, engine, model, params, tp, pp, api_key=key)
    st.world(ctx.host).endpoints[(ctx.host.name, port)] = ep
    ctx.print(f"Loading weights of {model} (TP {tp} x PP {pp}) {SIM}")
    await asyncio.sleep(0.3 * ctx.host.time_scale)
    ep.ready = True
    ctx.print(f"INFO:     Uvicorn running on http://{o.get('--host', '0.0.0.0')}:{port} (Press CTRL+C to quit) {SIM}")
    if len(placed) < 2:
        return await _park(proc, True)
    while proc.alive():
        lost = [name for name, raylet in placed.items() if not raylet.alive()]
        if lost:
            # vLLM's engine core dies with a worker of its placement group and the API server shuts down cleanly:
            # exit status 0, which Restart=on-failure does not restart.
            ep.ready = False
            ctx.print(
                f"ERROR Engine core died: RayWorkerWrapper on {', '.join(lost)}: The actor died unexpectedly before"
                f" finishing this task. {SIM}"
            )
            ctx.print(f"INFO:     Shutting down\nINFO:     Application shutdown complete. {SIM}")
            return 0
        await asyncio.sleep(0.1)
    await asyncio.Event().wait()
    return 0


async def _ray_group(ctx: Ctx, env: dict[str, str], world_size: int) -> dict[str, st.Proc]:
    """Wait for the placement group's GPUs; the raylet of every node it placed workers on, by host."""
    w = st.world(ctx.host)
    address = env.get("RAY_ADDRESS") or next(
        (a for a, h in w.ray.items() if h.proc.host is ctx.host and h.proc.alive()), ""
    )
    head = w.ray.get(address)
    if head is None or not head.proc.alive():
        raise CommandFailed(f"ConnectionError: Could not find any running Ray instance ({address or 'local'}) {SIM}")
    client = _token(ctx, env, st.installed(ctx.host, st.venv_of(ctx)).get("ray", "0"))
    if head.token is not None and client != head.token:
        raise CommandFailed(f"ray.exceptions.AuthenticationError: invalid or missing authentication token {SIM}")
    deadline = time.monotonic() + st.wait_s(ctx.host)
    while sum(n[2] for n in head.live_nodes().values()) < world_size:
        if time.monotonic() > deadline:
            have = sum(n[2] for n in head.live_nodes().values())
            raise CommandFailed(
                f"ValueError: Cannot provide a placement group of {world_size} GPUs: the Ray cluster has {have}"
                f" (nodes: {', '.join(head.live_nodes()) or 'none'}). See `ray status`. {SIM}"
            )
        await asyncio.sleep(0.1)
    copied = st.carried_over(ctx.host, env)
    if copied:
        ctx.print(f"INFO Copying the following environment variables to workers: {sorted(copied)} {SIM}")
    for name, (raylet, ip, _) in head.live_nodes().items():
        problems = st.fabric_errors(raylet.host, {**raylet.env, **copied}, raylet.memlock, vllm=True)
        if problems:
            raise CommandFailed("\n".join(f"(RayWorkerWrapper ip={ip}, {name}) {p}" for p in problems))
    return {name: node[0] for name, node in head.live_nodes().items()}


async def _rendezvous(ctx: Ctx, proc: st.Proc, address: str, rank: int, nnodes: int) -> None:
    group = st.world(ctx.host).groups.setdefault(address, st.Group())
    group.ranks[rank] = proc
    deadline = time.monotonic() + st.wait_s(ctx.host)
    while len(group.live()) < nnodes:
        if time.monotonic() > deadline:
            missing = sorted(set(range(nnodes)) - set(group.live()))
            raise CommandFailed(f"torch.distributed: timed out waiting for node rank(s) {missing} at {address} {SIM}")
        await asyncio.sleep(0.1)


async def wait_for_gpus(ctx: Ctx, args: list[str]) -> int:
    """assets/inference/ray-wait-gpus.py GPUS TIMEOUT: poll the Ray cluster at RAY_ADDRESS until its live nodes hold
    GPUS GPUs (exit 0) or TIMEOUT simulated seconds pass (exit 1), printing what the real script prints."""
    _, _, env, _ = st.unit_context(ctx)
    need, timeout = int(args[0]), float(args[1])
    deadline = time.monotonic() + timeout * ctx.host.time_scale
    address = env.get("RAY_ADDRESS", "")
    have = 0
    while True:
        head = st.world(ctx.host).ray.get(address)
        have = sum(n[2] for n in head.live_nodes().values()) if head is not None else 0
        if have >= need:
            ctx.print(f"roce-wizard: the Ray cluster has {have} GPUs (this group needs {need}); starting the engine")
            return 0
        if time.monotonic() >= deadline:
            ctx.eprint(
                f"roce-wizard: after {timeout:g} s the Ray cluster has {have} of the {need} GPUs this group needs;"
                " check roce-wizard-ray.service on the group's other hosts"
            )
            return 1
        await asyncio.sleep(0.1)
