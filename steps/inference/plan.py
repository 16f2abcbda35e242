"""The inference plan for one host: venv, pip install, fabric environment, Ray token, units and their restarts."""

from __future__ import annotations

from typing import Any

from steps.inference.builds import Build, choose_build
from steps.inference.entry import entry_change, entry_problems, shared_key_files
from steps.inference.layout import Layout, Node
from steps.inference.models import DTYPE_BYTES, resolve_spec
from steps.inference.units import (
    ENGINE_UNIT,
    ENV_PATH,
    KEY_ENV,
    KEY_HEADER,
    KEY_NGINX,
    LOCK_PATH,
    NON_CARRY_PATH,
    RAY_UNIT,
    TOKEN_PATH,
    UNIT_DIR,
    WAIT_PATH,
    engine_unit,
    env_file,
    install_commands,
    install_locked,
    key_command,
    lock_command,
    non_carry_over,
    package_problems,
    ray_unit,
    uses_ray,
    venv_bin,
    version_tuple,
    wait_script,
)
from steps.inference.weights import plan_weights
from wizard.answers.sections import InferenceSection
from wizard.engine.step import Change, ClusterView, FileWrite, HostPlan, Impact, RemoteCommand

STALE_S = 600  # a peer probed this much earlier than this host was not probed in this run


def serving_units(view: ClusterView, layout: Layout, host: str) -> list[str]:
    """Units ``host`` runs, in start order (Ray before the engine)."""
    return [path.rsplit("/", 1)[1] for path in desired_files(view, layout, host) if path.startswith(UNIT_DIR)]


def desired_files(view: ClusterView, layout: Layout, host: str) -> dict[str, str]:
    """Path -> content of every file the stage owns on ``host`` (the Ray token excepted)."""
    node = layout.node(host)
    if node is None:
        return {}
    files = {ENV_PATH: env_file(view.answers, node)}
    ray = ray_unit(view.answers, layout, node)
    if ray:
        files[f"{UNIT_DIR}/{RAY_UNIT}"] = ray
        files[NON_CARRY_PATH] = non_carry_over()
    engine = engine_unit(view.answers, layout, node)
    if engine:
        files[f"{UNIT_DIR}/{ENGINE_UNIT}"] = engine
        if WAIT_PATH in engine:
            files[WAIT_PATH] = wait_script()
    return files


def token_in_sync(view: ClusterView, layout: Layout) -> bool:
    """Every serving host holds the head's Ray token (compared by SHA-256, never by value)."""
    digests = [(view.stage_facts(n.host, "inference") or {}).get("ray_token_sha256") for n in layout.nodes]
    return bool(digests) and digests[0] is not None and len(set(digests)) == 1


def _stop_stale(facts: dict[str, Any], wanted: list[str]) -> Change | None:
    stale = [
        unit
        for unit, state in (facts.get("units") or {}).items()
        if unit in (RAY_UNIT, ENGINE_UNIT)  # nginx may serve more than the entry point: never stopped here
        and unit not in wanted
        and (state.get("active") == "active" or state.get("enabled") == "enabled")
    ]
    if not stale:
        return None
    return Change(
        summary=f"stop and disable {', '.join(stale)}",
        why="the answers no longer run this unit on this host (engine, backend or serving group changed)",
        impact=Impact.DISRUPTIVE,
        commands=[RemoteCommand(argv=["systemctl", "disable", "--now", unit]) for unit in stale],
    )


def model_gb(cfg: InferenceSection) -> float | None:
    spec, _ = resolve_spec(cfg.model, cfg.params_billion, cfg.dtype)
    published = resolve_spec(cfg.model, None, None)[0] or spec
    return published.params_billion * DTYPE_BYTES[published.dtype] if published else None


def engine_build(view: ClusterView, node: Node) -> Build:
    facts = view.stage_facts(node.host, "inference") or {}
    installed = (facts.get("packages") or {}).get(view.answers.inference.engine)
    return choose_build(view.answers.inference, node.host, node.gpu_driver, facts.get("latest"), installed)


def _absent_peers(view: ClusterView, layout: Layout, host: str, facts: dict[str, Any]) -> list[str]:
    """Serving hosts not probed in this run (an earlier stage failed there): deploying without them cannot serve."""
    mine = facts.get("probed_at")
    me = layout.node(host)
    if mine is None or me is None or layout.single_node:  # a one-node replica does not need its peers
        return []
    absent = []
    for node in layout.members(me):  # a replica needs only the hosts of its own group
        theirs = (view.stage_facts(node.host, "inference") or {}).get("probed_at")
        if node.host != host and (theirs is None or mine - theirs > STALE_S):
            absent.append(
                f"{node.host} was not probed in this run (an earlier stage failed there or it is unreachable);"
                " the serving group needs every host: fix it, then re-run from the failed stage"
            )
    return absent


def plan_host(view: ClusterView, layout: Layout, host: str, ray_token: str, api_key: str) -> HostPlan:
    cfg = view.answers.inference
    plan = HostPlan(stage="inference", host=host, notes=list(layout.notes))
    facts = view.stage_facts(host, "inference") or {}
    if host in layout.idle:
        stale = _stop_stale(facts, [])
        plan.changes = [stale] if stale else []
        plan.noop_reason = None if stale else layout.idle[host]
        return plan
    plan.blockers = layout.refusals(host) + _absent_peers(view, layout, host, facts) + entry_problems(view, layout)
    node = layout.node(host)
    if plan.blockers or node is None:
        return plan
    build = engine_build(view, node)
    if build.blocker:
        plan.blockers.append(build.blocker)
    python = facts.get("python")
    if python and version_tuple(python) < (3, 10):
        plan.blockers.append(
            f"{host}: {venv_bin(cfg, 'python')} is Python {python}; vLLM and SGLang need >= 3.10."
            " Fix: point inference.venv at a new path (the wizard creates it) or remove the old venv"
        )
    if plan.blockers:
        return plan
    if uses_ray(cfg) and cfg.ray_auth == "token" and node.rank == 0:
        plan.notes.append(
            f"Ray token authentication is on (Ray >= 2.52, CVE-2025-62593): one shared token in {TOKEN_PATH} (0600)"
            " on every host; Ray clients such as `ray status` need RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH. The"
            f" dashboard listens on 127.0.0.1 only: ssh -L 8265:127.0.0.1:8265 {host}"
        )
    if uses_ray(cfg) and cfg.ray_auth == "off":
        plan.notes.append(
            f"Ray token authentication is off: anyone who reaches {layout.head_of(node).ip}:"
            f"{cfg.ray_port} can run code on every host (CVE-2025-62593 class); set inference.ray_auth: token"
        )
    changes: list[Change] = []
    if python is None:
        changes.append(
            Change(
                summary=f"create the Python venv {cfg.venv}",
                why="vLLM/SGLang pin their own torch and CUDA wheels; a dedicated venv keeps them off the system"
                " Python (never conda: PyTorch stopped publishing to its conda channel after 2.5)",
                commands=[
                    RemoteCommand(argv=["apt-get", "update"], timeout_s=900),
                    RemoteCommand(
                        argv=["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "python3-venv"],
                        timeout_s=900,
                    ),
                    RemoteCommand(argv=["python3", "-m", "venv", cfg.venv]),
                ],
            )
        )
    missing = package_problems(cfg, facts.get("packages") or {}, build) if python else [f"new venv {cfg.venv}"]
    changes += _install_changes(view, layout, node, facts, build, missing)
    download, refused = plan_weights(cfg, host, facts.get("weights") or {}, model_gb(cfg))
    if refused:
        plan.blockers.append(refused)
        return plan
    if download:
        changes.append(download)
    files = [
        FileWrite(path=path, content=content, mode=0o644, before=(facts.get("files") or {}).get(path))
        for path, content in desired_files(view, layout, host).items()
        if (facts.get("files") or {}).get(path) != content
    ]
    if uses_ray(cfg) and cfg.ray_auth == "token" and not token_in_sync(view, layout):
        files.append(FileWrite(path=TOKEN_PATH, content=ray_token + "\n", mode=0o600, secret=True))
    shared_key = shared_key_files(view, layout, host, api_key)
    files += shared_key
    key_missing = node in layout.api_nodes() and not _key_present(facts) and not shared_key
    if key_missing:
        changes.append(
            Change(
                summary="generate the API key on the host (openssl rand -hex 32, 0600 root)",
                why=f"the API binds {cfg.api_host}:{cfg.port}; vLLM/SGLang then refuse /v1 requests without the key."
                " It is created on the host and read there by systemd and the probes; it never enters answers,"
                " logs or state. Clients read it from the host's key file",
                commands=[key_command()],
                creates_files=[KEY_ENV, KEY_HEADER, KEY_NGINX],
            )
        )
    if files:
        env_paths = ", ".join(f.path for f in files)
        changes.append(
            Change(
                summary=f"write {env_paths}",
                why="environment from the verified fabric facts (management interface for bootstrap, RoCE HCAs for"
                " NCCL) loaded before Ray/the engine start; units run with LimitMEMLOCK=infinity"
                + (
                    "; a new shared Ray token (0600) because not every host held the head's"
                    if any(f.path == TOKEN_PATH for f in files)
                    else ""
                )
                + (
                    "; one API key (0600) for every replica behind the entry point, whose keys differed"
                    if shared_key
                    else ""
                ),
                files=files,
            )
        )
    units = _unit_change(view, layout, host, facts, [f.path for f in files], bool(missing) or key_missing)
    entry = entry_change(view, layout, host, facts)
    changes += [c for c in (_stop_stale(facts, serving_units(view, layout, host)), units, entry) if c]
    plan.changes = changes
    if not changes:
        packages = facts.get("packages") or {}
        versions = f"{cfg.engine} {packages.get(cfg.engine, '?')}" + (
            f", Ray {packages.get('ray', '?')}" if uses_ray(cfg) else ""
        )
        role = (
            f"replica {node.group + 1} of {len(layout.groups())}, rank {node.rank}"
            if layout.replicas
            else f"rank {node.rank}"
        )
        plan.noop_reason = (
            f"{', '.join(serving_units(view, layout, host))} active with the answers' content ({versions},"
            f" {cfg.model}, TP {cfg.tensor_parallel_size} x PP {cfg.pipeline_parallel_size}, {role})"
        )
    return plan


def _install_changes(
    view: ClusterView, layout: Layout, node: Node, facts: dict[str, Any], build: Build, missing: list[str]
) -> list[Change]:
    """The engine install. In a group over several nodes the head installs and freezes its venv into LOCK_PATH;
    every other host of the group installs exactly that lock (Ray refuses mismatched nodes, and a replica whose
    hosts resolved different versions fails in ways no check names)."""
    cfg = view.answers.inference
    head = layout.head_of(node)
    spans = len(layout.members(node)) > 1
    files = facts.get("files") or {}
    if spans and node is not head:
        head_facts = view.stage_facts(head.host, "inference") or {}
        lock = (head_facts.get("files") or {}).get(LOCK_PATH)
        if lock:
            theirs, mine = head_facts.get("packages") or {}, facts.get("packages") or {}
            differ = [f"{n} {mine.get(n)} here, {theirs.get(n)} on {head.host}" for n in ("vllm", "sglang", "ray",
                      "torch") if theirs.get(n) != mine.get(n)]  # fmt: skip
            if not differ and files.get(LOCK_PATH) == lock:
                return []
            # The indexes of the head's build (its +cuXXX wheels), not of what this host had.
            build = choose_build(cfg, node.host, node.gpu_driver, None, theirs.get(cfg.engine))
            return [
                Change(
                    summary=f"pip install the versions of {head.host} (its {LOCK_PATH}) into {cfg.venv}",
                    why="the same versions on every host of the group: "
                    + ("; ".join(differ) if differ else "the head's lock file changed"),
                    files=[FileWrite(path=LOCK_PATH, content=lock, before=files.get(LOCK_PATH))],
                    commands=[RemoteCommand(argv=install_locked(cfg, build), timeout_s=3600)],
                )
            ]
    if not missing:
        if spans and node is head and not files.get(LOCK_PATH):
            return [Change(summary=f"record the venv's versions in {LOCK_PATH}", why="the group's other hosts"
                           " install exactly these (pip freeze)", commands=[lock_command(cfg)])]  # fmt: skip
        return []
    commands = [RemoteCommand(argv=argv, timeout_s=3600) for argv in install_commands(cfg, build)]
    if spans:
        commands.append(lock_command(cfg))
    return [
        Change(
            summary=f"pip install {build.spec}{' and Ray >= 2.52' if uses_ray(cfg) else ''} into {cfg.venv}",
            why="; ".join([*missing, build.why])
            + (f"; then pip freeze into {LOCK_PATH} for the group's other hosts" if spans else ""),
            commands=commands,
        )
    ]


def _unit_change(
    view: ClusterView, layout: Layout, host: str, facts: dict[str, Any], written: list[str], reinstalled: bool
) -> Change | None:
    units = serving_units(view, layout, host)
    states = facts.get("units") or {}
    restart: list[str] = []
    shared = ENV_PATH in written or TOKEN_PATH in written or KEY_ENV in written or reinstalled
    for unit in units:
        state = states.get(unit) or {}
        changed = f"{UNIT_DIR}/{unit}" in written or shared or state.get("active") != "active"
        if changed or (restart and unit == ENGINE_UNIT):  # a restarted Ray cluster takes the engine with it
            restart.append(unit)
    enable = [u for u in units if (states.get(u) or {}).get("enabled") != "enabled"]
    if not restart and not enable:
        return None
    commands = []
    if any(p.startswith(UNIT_DIR) for p in written):
        commands.append(RemoteCommand(argv=["systemctl", "daemon-reload"]))
    commands += [RemoteCommand(argv=["systemctl", "enable", unit]) for unit in enable]
    if RAY_UNIT in restart and ENGINE_UNIT in restart:
        # The engine is BindsTo= its Ray node, so a blocking restart of Ray also restarts the engine in the same
        # transaction and waits for it; the engine's ExecStartPre= waits for the group's GPUs, and a worker whose
        # units change in a later wave (a replica becoming part of a spanning group) never comes: stop it first.
        commands.append(RemoteCommand(argv=["systemctl", "stop", ENGINE_UNIT]))
    # --no-block for the engine: its start job lasts until ExecStartPre= has seen the group's GPUs join, and the
    # group's other hosts may only be getting their units now (the health check waits for the API instead).
    commands += [
        RemoteCommand(argv=["systemctl", "restart", *(["--no-block"] if unit == ENGINE_UNIT else []), unit])
        for unit in restart
    ]
    serving = [u for u in restart if (states.get(u) or {}).get("active") == "active"]
    return Change(
        summary="(re)start " + ", ".join(restart) if restart else "enable " + ", ".join(enable),
        why="start at boot and pick up the new files"
        + (f"; restarting interrupts the running {', '.join(serving)}" if serving else ""),
        impact=Impact.DISRUPTIVE if serving else Impact.SAFE,
        commands=commands,
    )


def _key_present(facts: dict[str, Any]) -> bool:
    """Both key files exist, non-empty, 0600 root (stat read by the probe; the key itself is never read)."""
    key = facts.get("api_key") or {}
    return all(key.get(name) == "600 root" for name in ("env", "header", "nginx"))
