"""One OpenAI-compatible entry point over the replicas: nginx on one host, with passive health checks and retries.

Why nginx: it is the load balancer operators already run and know how to watch, it is one apt package on Ubuntu, and
it needs nothing from the engines (SGLang's router discovers workers through SGLang-only endpoints, vLLM's
production-stack router is built for Kubernetes). What it does (nginx docs, ngx_http_upstream_module and
ngx_http_proxy_module): round-robin over the replicas' heads; a replica that fails is skipped for fail_timeout
(open-source nginx has passive health checks only); a request whose connection fails, or that gets 502/503, goes to
the next replica (proxy_next_upstream), never twice to a replica that already took it; a POST that reached a replica
is not re-sent (nginx's default for non-idempotent requests), so a completion is never generated twice.
The client's Authorization header passes through, so every replica checks the same key: the wizard hands one key to
every replica head when their keys differ (compared by SHA-256), like the Ray token.
"""

from __future__ import annotations

from typing import Any

from steps.inference.layout import Layout
from steps.inference.sglang_front import SGLANG_CONF, front_conf, fronted
from steps.inference.units import HEADER, KEY_ENV, KEY_HEADER, KEY_NGINX
from wizard.engine.step import Change, ClusterView, FileWrite, Impact, RemoteCommand

NGINX_UNIT = "nginx.service"
ENTRY_CONF = "/etc/nginx/conf.d/roce-wizard-inference.conf"
UPSTREAM_HEADER = "X-Roce-Wizard-Upstream"
MAX_FAILS = 1
FAIL_TIMEOUT_S = 10
TRIES = 3


def entry_host(view: ClusterView, layout: Layout) -> str | None:
    """The host that runs the entry point, when there are replicas to spread requests over."""
    cfg = view.answers.inference
    heads = layout.api_nodes()
    if cfg.entry_port is None or len(heads) < 2:
        return None
    return cfg.entry_host or heads[0].host


def entry_problems(view: ClusterView, layout: Layout) -> list[str]:
    cfg = view.answers.inference
    host = entry_host(view, layout)
    if host is None:
        return []
    problems = []
    if layout.node(host) is None:
        problems.append(
            f"inference.entry_host {host} is not a serving host of this layout; name one of"
            f" {', '.join(n.host for n in layout.nodes)} (or leave it unset for the first replica's head)"
        )
    if cfg.entry_port == cfg.port:
        problems.append(
            f"inference.entry_port {cfg.entry_port} is also inference.port, where the replica on {host} serves;"
            " pick another port for the entry point"
        )
    return problems


def nginx_conf(view: ClusterView, layout: Layout) -> str:
    cfg = view.answers.inference
    listen = f"{cfg.entry_port}" if cfg.api_host in ("0.0.0.0", "::") else f"{cfg.api_host}:{cfg.entry_port}"
    servers = "".join(
        f"    server {n.ip}:{cfg.port} max_fails={MAX_FAILS} fail_timeout={FAIL_TIMEOUT_S}s;  # replica {n.group + 1}"
        f" ({n.host})\n"
        for n in layout.api_nodes()
    )
    return (
        f"{HEADER}"
        f"# One OpenAI-compatible entry point for {cfg.model}: requests are spread over the replicas' APIs.\n"
        "upstream roce_wizard_replicas {\n"
        f"{servers}"
        "    keepalive 16;\n"
        "}\n"
        "server {\n"
        f"    listen {listen};\n"
        "    location / {\n"
        "        proxy_pass http://roce_wizard_replicas;\n"
        "        proxy_http_version 1.1;\n"
        '        proxy_set_header Connection "";\n'
        "        # a refused connection or a replica answering 502/503 moves the request to the next replica\n"
        "        proxy_next_upstream error timeout http_502 http_503;\n"
        f"        proxy_next_upstream_tries {TRIES};\n"
        "        proxy_connect_timeout 2s;\n"
        "        proxy_read_timeout 600s;\n"
        "        proxy_buffering off;  # streamed tokens reach the client as they come\n"
        f"        add_header {UPSTREAM_HEADER} $upstream_addr always;\n"
        "    }\n"
        "}\n"
    )


def keys_in_sync(view: ClusterView, layout: Layout) -> bool:
    """Every replica head holds the same API key (compared by SHA-256, never by value)."""
    digests = [(view.stage_facts(n.host, "inference") or {}).get("api_key_sha256") for n in layout.api_nodes()]
    return bool(digests) and digests[0] is not None and len(set(digests)) == 1


def shared_key_files(view: ClusterView, layout: Layout, host: str, api_key: str) -> list[FileWrite]:
    """One key for every replica behind the entry point, written where the heads' keys differ or are missing."""
    node = layout.node(host)
    if entry_host(view, layout) is None or node is None or node not in layout.api_nodes():
        return []
    if keys_in_sync(view, layout):
        return []
    return [
        FileWrite(path=KEY_ENV, content=f"VLLM_API_KEY={api_key}\nROCE_WIZARD_API_KEY={api_key}\n", mode=0o600,
                  secret=True),
        FileWrite(path=KEY_HEADER, content=f"Authorization: Bearer {api_key}\n", mode=0o600, secret=True),
        FileWrite(path=KEY_NGINX, content=f'"Bearer {api_key}" 1;\n', mode=0o600, secret=True),
    ]  # fmt: skip


def entry_change(view: ClusterView, layout: Layout, host: str, facts: dict[str, Any]) -> Change | None:
    """nginx with the sites this host needs (the entry point, SGLang's key-checking front); nothing when it already
    runs with this content."""
    cfg = view.answers.inference
    wanted: dict[str, str] = {}
    if entry_host(view, layout) == host:
        wanted[ENTRY_CONF] = nginx_conf(view, layout)
    if fronted(view, layout, host):
        wanted[SGLANG_CONF] = front_conf(view)
    have = facts.get("files") or {}
    stale = [p for p in (ENTRY_CONF, SGLANG_CONF) if have.get(p) and p not in wanted]
    if stale:
        # A site the answers no longer call for (entry point turned off, engine changed): nginx must stop serving it.
        return Change(
            summary=f"remove {', '.join(stale)} and reload nginx",
            why="the answers no longer call for this site; nginx would keep serving the old replicas or front",
            impact=Impact.DISRUPTIVE,
            commands=[RemoteCommand(argv=["rm", "-f", *stale]), RemoteCommand(argv=["nginx", "-t", "-q"]),
                      RemoteCommand(argv=["systemctl", "reload-or-restart", NGINX_UNIT])],
        )  # fmt: skip
    if not wanted:
        return None
    state = (facts.get("units") or {}).get(NGINX_UNIT) or {}
    installed = bool(facts.get("nginx"))
    files = [FileWrite(path=p, content=c, before=have.get(p)) for p, c in wanted.items() if have.get(p) != c]
    if installed and not files and state.get("active") == "active" and state.get("enabled") == "enabled":
        return None
    commands = []
    if not installed:
        commands.append(RemoteCommand(argv=["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y",
                                            "nginx"], timeout_s=900))  # fmt: skip
    commands += [
        RemoteCommand(argv=["nginx", "-t", "-q"]),
        RemoteCommand(argv=["systemctl", "enable", NGINX_UNIT]),
        RemoteCommand(argv=["systemctl", "reload-or-restart", NGINX_UNIT]),
    ]
    sites = []
    if ENTRY_CONF in wanted:
        sites.append(f"entry point on {host}:{cfg.entry_port} over {len(layout.api_nodes())} replicas")
    if SGLANG_CONF in wanted:
        sites.append(f"SGLang's API on {host}:{cfg.port} with the key checked")
    return Change(
        summary=f"{' and '.join(sites)} (nginx)",
        why="nginx -t checks the files first. "
        + (
            "The entry point is one OpenAI-compatible address for clients: round-robin over the replicas' APIs, a"
            f" failing replica skipped for {FAIL_TIMEOUT_S} s, a refused request retried on the next one. "
            if ENTRY_CONF in wanted
            else ""
        )
        + (
            "SGLang gets no key (it would log it and show it on its command line) and listens on 127.0.0.1; nginx"
            " answers /v1/* without the key with 401"
            if SGLANG_CONF in wanted
            else ""
        ),
        files=files,
        commands=commands,
    )
