"""What the inference stage installs: the fabric environment file, Ray and engine systemd units, pip commands."""

from __future__ import annotations

import json
import posixpath
import re
import shlex

from steps.inference.builds import Build
from steps.inference.layout import Layout, Node
from steps.roce.facts import QOS_UNIT  # DSCP trust, PFC, ECN and RDMA-CM ToS, set by stage roce
from wizard.answers.model import Answers
from wizard.answers.sections import InferenceSection
from wizard.engine.step import RemoteCommand
from wizard.paths import assets_dir

ENV_PATH = "/etc/roce-wizard/inference.env"
TOKEN_PATH = "/etc/roce-wizard/ray-auth-token"
UNIT_DIR = "/etc/systemd/system"
RAY_UNIT = "roce-wizard-ray.service"
ENGINE_UNIT = "roce-wizard-inference.service"
# The API key lives only on the host: generated there, 0600 root, read by systemd (EnvironmentFile=) and by curl.
KEY_ENV = "/etc/roce-wizard/inference-api-key.env"
KEY_HEADER = "/etc/roce-wizard/inference-api-key.header"
KEY_NGINX = "/etc/roce-wizard/inference-api-key.nginx"  # SGLang's front (steps/inference/sglang_front.py) reads it
# Run by the engine unit of a Ray group's head before vLLM starts: waits until the workers' GPUs have joined.
WAIT_PATH = "/etc/roce-wizard/ray-wait-gpus.py"
# Restart a dead engine (Restart=always: vLLM exits 0 when a Ray worker dies), but give up on a crash loop: more
# than START_BURST starts within START_INTERVAL_S leaves the unit failed for the operator (systemd.unit(5)).
START_INTERVAL_S = 1800
START_BURST = 10
# vLLM copies the head's VLLM_*, NCCL_*, UCX_* and HF_* variables to its Ray workers (vllm/ray/ray_env.py,
# get_env_vars_to_copy), except the names in $VLLM_CONFIG_ROOT/ray_non_carry_over_env_vars.json. A worker's own
# interfaces and HCAs must win over the head's, so the env file points VLLM_CONFIG_ROOT here and this file lists them.
VLLM_CONFIG_ROOT = "/etc/roce-wizard/vllm"
NON_CARRY_PATH = f"{VLLM_CONFIG_ROOT}/ray_non_carry_over_env_vars.json"
PER_HOST_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME")
# `pip freeze` of a group head's venv after its install; the group's other hosts install exactly these versions.
LOCK_PATH = "/etc/roce-wizard/inference-requirements.lock"
RAY_MIN_VERSION = (2, 52)  # token authentication; older Ray has the unauthenticated-dashboard RCE CVE-2025-62593
RAY_SPEC = "ray[cgraph]>=2.52"  # cgraph: Ray Compiled Graph, which vLLM's pipeline parallelism on Ray uses
HEADER = "# Managed by roce-wizard (stage inference). Change the answers file and re-run instead of editing.\n"
_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def uses_ray(cfg: InferenceSection) -> bool:
    return cfg.engine == "vllm" and cfg.executor_backend == "ray"


def venv_bin(cfg: InferenceSection, tool: str) -> str:
    return f"{cfg.venv.rstrip('/')}/bin/{tool}"


def version_tuple(text: str | None) -> tuple[int, ...]:
    """'2.52.0' -> (2, 52, 0); suffixes such as '.post1' or '+cu129' are ignored."""
    parts = []
    for piece in (text or "").split("+")[0].split("."):
        match = re.match(r"\d+", piece)
        if not match:
            break
        parts.append(int(match.group()))
    return tuple(parts)


def systemd_quote(arg: str) -> str:
    """One ExecStart word: '%' doubled (systemd specifiers), quoted when it holds spaces or quotes."""
    arg = arg.replace("%", "%%")
    if _PLAIN.match(arg) or re.fullmatch(r"\$\{[A-Z_]+\}", arg):  # ${VAR}: systemd substitutes it whole
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def env_file(answers: Answers, node: Node) -> str:
    """KEY=VALUE lines systemd loads before Ray or the engine starts; Ray's workers inherit them from the raylet."""
    cfg = answers.inference
    lines = [
        HEADER.rstrip("\n"),
        f"# Fabric facts of {node.host} as read right before this deployment; Ray, vLLM/SGLang and NCCL read these.",
        "# Bootstrap (TCP) traffic stays on the management interface; RDMA uses the RoCE ports listed below.",
        f"# NCCL_IB_TC, NCCL_CROSS_NIC and the other RoCE settings come from {answers.nccl.conf_path} (stage nccl).",
        f"NCCL_SOCKET_IFNAME=={node.ifname}",
        f"GLOO_SOCKET_IFNAME={node.ifname}",
        f"NCCL_IB_HCA=={','.join(node.hcas)}",
    ]
    if answers.nccl.conf_path != "/etc/nccl.conf":
        lines.append(f"NCCL_CONF_FILE={answers.nccl.conf_path}")
    if cfg.engine == "vllm":
        lines.append(f"VLLM_HOST_IP={node.ip}")
    if uses_ray(cfg):
        lines.append(f"VLLM_CONFIG_ROOT={VLLM_CONFIG_ROOT}")
    if uses_ray(cfg) and cfg.ray_auth == "token":
        lines += ["RAY_AUTH_MODE=token", f"RAY_AUTH_TOKEN_PATH={TOKEN_PATH}"]
    if cfg.hf_home:
        lines.append(f"HF_HOME={cfg.hf_home}")
    if cfg.offline:
        lines.append("HF_HUB_OFFLINE=1")
    return "\n".join(lines) + "\n"


def ray_argv(answers: Answers, layout: Layout, node: Node) -> list[str]:
    cfg = answers.inference
    head = layout.head_of(node)
    ray = venv_bin(cfg, "ray")
    if node.rank == 0:
        return [
            ray,
            "start",
            "--head",
            f"--port={cfg.ray_port}",
            f"--node-ip-address={node.ip}",
            "--dashboard-host=127.0.0.1",
            "--disable-usage-stats",
            "--block",
        ]
    return [
        ray,
        "start",
        f"--address={head.ip}:{cfg.ray_port}",
        f"--node-ip-address={node.ip}",
        "--disable-usage-stats",
        "--block",
    ]


def engine_argv(answers: Answers, layout: Layout, node: Node) -> list[str] | None:
    """The serving command for ``node``; None where the node only runs a Ray worker (vLLM on Ray)."""
    cfg = answers.inference
    head = layout.head_of(node)
    nnodes = layout.group_size
    if cfg.engine == "sglang":
        argv = [venv_bin(cfg, "python"), "-m", "sglang.launch_server", "--model-path", cfg.model]
        argv += ["--tp-size", str(cfg.tensor_parallel_size)]
        if cfg.pipeline_parallel_size > 1:
            argv += ["--pp-size", str(cfg.pipeline_parallel_size)]
        argv += ["--context-length", str(cfg.max_model_len)]
        if nnodes > 1:
            argv += ["--dist-init-addr", f"{head.ip}:{cfg.dist_port}", "--nnodes", str(nnodes)]
            argv += ["--node-rank", str(node.rank)]
        if layout.quantization:
            argv += ["--quantization", layout.quantization]
        if layout.cast_dtype:
            argv += ["--dtype", layout.cast_dtype]
        if node.rank == 0:
            # No key: SGLang would show it on its command line and log it; nginx in front checks it instead.
            argv += ["--host", "127.0.0.1", "--port", str(sglang_internal_port(cfg))]
        return argv
    if uses_ray(cfg) and node.rank != 0:
        return None
    argv = [venv_bin(cfg, "vllm"), "serve", cfg.model]
    argv += ["--tensor-parallel-size", str(cfg.tensor_parallel_size)]
    argv += ["--pipeline-parallel-size", str(cfg.pipeline_parallel_size)]
    argv += ["--distributed-executor-backend", cfg.executor_backend]
    if cfg.executor_backend == "mp" and nnodes > 1:
        argv += ["--nnodes", str(nnodes), "--node-rank", str(node.rank)]
        argv += ["--master-addr", head.ip, "--master-port", str(cfg.dist_port)]
    argv += ["--max-model-len", str(cfg.max_model_len)]
    argv += ["--gpu-memory-utilization", f"{cfg.gpu_memory_utilization:g}"]
    if layout.quantization:
        argv += ["--quantization", layout.quantization]
    if layout.cast_dtype:
        argv += ["--dtype", layout.cast_dtype]
    if node.rank == 0:
        argv += ["--host", cfg.api_host, "--port", str(cfg.port)]
    else:
        argv.append("--headless")  # followers run engine workers only; rank 0 serves the API
    return argv


def sglang_internal_port(cfg: InferenceSection) -> int:
    """Where SGLang itself listens on 127.0.0.1, behind its nginx front on cfg.port."""
    return cfg.port + 20000 if cfg.port <= 45535 else cfg.port - 20000


def key_command() -> RemoteCommand:
    """Create the API key on the host when it has none: `openssl rand -hex 32` into three 0600 root files (systemd's
    EnvironmentFile= form, a curl header file, an nginx map line for SGLang's front). Prints nothing, so the key
    never reaches the wizard or its logs."""
    script = (
        f"set -e; umask 077; mkdir -p {posixpath.dirname(KEY_ENV)};"
        f" if ! [ -s {KEY_ENV} ] || ! [ -s {KEY_HEADER} ] || ! [ -s {KEY_NGINX} ]; then"
        " k=$(openssl rand -hex 32);"
        f' printf \'VLLM_API_KEY=%s\\nROCE_WIZARD_API_KEY=%s\\n\' "$k" "$k" > {KEY_ENV}.new;'
        f" printf 'Authorization: Bearer %s\\n' \"$k\" > {KEY_HEADER}.new;"
        f' printf \'"Bearer %s" 1;\\n\' "$k" > {KEY_NGINX}.new;'
        f" mv {KEY_ENV}.new {KEY_ENV}; mv {KEY_HEADER}.new {KEY_HEADER}; mv {KEY_NGINX}.new {KEY_NGINX}; fi;"
        f" chown root:root {KEY_ENV} {KEY_HEADER} {KEY_NGINX}; chmod 600 {KEY_ENV} {KEY_HEADER} {KEY_NGINX}"
    )
    return RemoteCommand(argv=["sh", "-c", script])


def non_carry_over() -> str:
    """The JSON list vLLM reads once at import on the head: these variables stay each worker's own."""
    return json.dumps(list(PER_HOST_VARS)) + "\n"


def wait_script() -> str:
    """The ExecStartPre= helper of a Ray group's head (assets/inference/ray-wait-gpus.py)."""
    return (assets_dir() / "inference" / "ray-wait-gpus.py").read_text()


def _unit(
    description: str,
    docs: str,
    after: list[str],
    exec_start: list[str],
    env: list[str],
    node: Node,
    api: bool,
    *,
    binds_to: str | None = None,
    pre: list[str] | None = None,
    start_timeout_s: float | None = None,
) -> str:
    # Requires= + After= the QoS unit: if DSCP/PFC could not be set, systemd does not start NCCL users at all
    # (systemd.unit(5), Requires=: "if one of the other units fails to activate, and an ordering dependency After= on
    # the failing unit is set, this unit will not be started").
    after = ([QOS_UNIT] if node.qos else []) + after
    requires = [u for u in after if u.startswith("roce-wizard-") and u != binds_to]
    unit = [HEADER.rstrip("\n"), "[Unit]", f"Description={description}", f"Documentation={docs}"]
    unit += ["Wants=network-online.target", "After=" + " ".join(["network-online.target", *after])]
    if requires:
        unit.append("Requires=" + " ".join(requires))
    if binds_to:
        # BindsTo=: the engine stops with its Ray node and starts again with it (systemd.unit(5)), never running
        # on top of a raylet that is gone.
        unit.append(f"BindsTo={binds_to}")
    unit += [f"StartLimitIntervalSec={START_INTERVAL_S}", f"StartLimitBurst={START_BURST}"]
    unit += ["", "[Service]", "Type=simple", f"EnvironmentFile={ENV_PATH}"]
    if api:  # not optional ("-"): without its key the API must not come up open
        unit.append(f"EnvironmentFile={KEY_ENV}")
    unit += [f"Environment={e}" for e in env]
    if pre:
        unit.append("ExecStartPre=" + " ".join(systemd_quote(a) for a in pre))
    if start_timeout_s is not None:
        unit.append(f"TimeoutStartSec={start_timeout_s:g}")
    unit += [
        "ExecStart=" + " ".join(systemd_quote(a) for a in exec_start),
        "# always, not on-failure: vLLM shuts down with exit status 0 when a Ray worker of its group dies",
        "Restart=always",
        "RestartSec=15",
        "TimeoutStopSec=120",
        "# RDMA registers (pins) GPU and host buffers: without an unlimited memlock, ibv_reg_mr fails",
        "LimitMEMLOCK=infinity",
        "LimitNOFILE=1048576",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    return "\n".join(unit) + "\n"


def ray_unit(answers: Answers, layout: Layout, node: Node) -> str | None:
    if not uses_ray(answers.inference):
        return None
    role = "head" if node.rank == 0 else f"worker (joins {layout.head_of(node).host})"
    return _unit(
        f"Ray {role} for vLLM on {node.host}",
        "https://docs.vllm.ai/en/latest/serving/parallelism_scaling.html",
        [],
        ray_argv(answers, layout, node),
        [],
        node,
        False,
    )


def engine_unit(answers: Answers, layout: Layout, node: Node) -> str | None:
    cfg = answers.inference
    argv = engine_argv(answers, layout, node)
    if argv is None:
        return None
    ray = uses_ray(cfg)
    after = [RAY_UNIT] if ray else []
    env = [f"RAY_ADDRESS={node.ip}:{cfg.ray_port}"] if ray else []
    # The NCCL the engine loads is its torch's bundled one, not the system libnccl2 the nccl stage tested: its init
    # lines (version, NET/IB or NET/Socket) in the journal are the only proof of what it runs on. INIT,NET limits
    # them to communicator setup; vLLM hands NCCL_* to its Ray workers, so they print theirs into this journal too.
    env += ["NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET"]
    name = "vLLM" if cfg.engine == "vllm" else "SGLang"
    docs = (
        "https://docs.vllm.ai/en/latest/serving/parallelism_scaling.html"
        if cfg.engine == "vllm"
        else "https://docs.sglang.io/references/multi_node_deployment/multi_node.html"
    )
    role = "API server" if node.rank == 0 else f"node rank {node.rank}"
    pre, timeout = None, None
    if ray and layout.group_size > 1:
        gpus = cfg.tensor_parallel_size * cfg.pipeline_parallel_size
        pre = [venv_bin(cfg, "python"), WAIT_PATH, str(gpus), f"{cfg.ready_timeout_s:g}"]
        timeout = cfg.ready_timeout_s + 60  # ExecStartPre= counts against TimeoutStartSec= (default 90 s)
    return _unit(
        f"{name} {role} for {cfg.model} on {node.host}",
        docs,
        after,
        argv,
        env,
        node,
        node.rank == 0,
        binds_to=RAY_UNIT if ray else None,
        pre=pre,
        start_timeout_s=timeout,
    )


def install_commands(cfg: InferenceSection, build: Build) -> list[list[str]]:
    """pip into the operator's venv (never conda): the engine build the driver runs, plus Ray for vLLM on Ray."""
    python = venv_bin(cfg, "python")
    assert build.spec is not None
    if cfg.engine == "sglang":
        # SGLang documents uv; some of its dependencies are published only as pre-releases.
        pip = [python, "-m", "pip", "install", "--disable-pip-version-check", *build.index_args]
        uv = [venv_bin(cfg, "uv"), "pip", "install", "--python", python, *build.index_args, "--prerelease=allow"]
        return [[*pip, "--upgrade", "pip", "uv"], [*uv, build.spec]]
    packages = [build.spec] + ([RAY_SPEC] if uses_ray(cfg) else [])
    return [[python, "-m", "pip", "install", "--disable-pip-version-check", *build.index_args, *packages]]


def package_problems(cfg: InferenceSection, packages: dict[str, str], build: Build | None = None) -> list[str]:
    """What the venv lacks compared with the answers (empty when nothing needs installing)."""
    problems = []
    have = packages.get(cfg.engine)
    if have is None:
        problems.append(f"{cfg.engine} is not installed in {cfg.venv}")
    elif cfg.engine_version and version_tuple(have) != version_tuple(cfg.engine_version):
        problems.append(f"{cfg.engine} {have} is installed, the answers pin {cfg.engine_version}")
    elif build is not None and build.spec and "+" in build.spec and not have.endswith("+" + build.spec.split("+")[1]):
        problems.append(f"{cfg.engine} {have} is installed, this host's driver needs the {build.spec} build")
    if uses_ray(cfg):
        ray = packages.get("ray")
        if ray is None:
            problems.append(f"ray is not installed in {cfg.venv}")
        elif version_tuple(ray)[:2] < RAY_MIN_VERSION:
            problems.append(f"ray {ray} is older than 2.52 (no token authentication; CVE-2025-62593)")
    return problems


def lock_command(cfg: InferenceSection) -> RemoteCommand:
    """Write the head's `pip freeze` to LOCK_PATH (atomically): the group's other hosts install exactly it."""
    python = shlex.quote(venv_bin(cfg, "python"))
    lock = shlex.quote(LOCK_PATH)
    script = (
        f"set -e; mkdir -p {shlex.quote(posixpath.dirname(LOCK_PATH))};"
        f" {python} -m pip freeze --disable-pip-version-check > {lock}.new; mv {lock}.new {lock}"
    )
    return RemoteCommand(argv=["sh", "-c", script])


def install_locked(cfg: InferenceSection, build: Build) -> list[str]:
    """Install the group head's exact versions (its lock file, copied here) into this host's venv."""
    python = venv_bin(cfg, "python")
    return [python, "-m", "pip", "install", "--disable-pip-version-check", *build.index_args, "-r", LOCK_PATH]
