"""Simulated nginx: the load balancer the wizard puts in front of the inference replicas.

What is modelled, from the nginx documentation (ngx_http_upstream_module, ngx_http_proxy_module):
- the configuration is read when the master process starts (or reloads): a file changed later has no effect until
  then, and `nginx -t` checks it;
- `upstream` servers are chosen round-robin; a server that fails `max_fails` times within `fail_timeout` is not
  chosen for `fail_timeout` (passive health checks, the only kind open-source nginx has);
- `proxy_next_upstream error timeout http_502 http_503` passes a request to the next server when connecting fails or
  the server answers 502/503, at most `proxy_next_upstream_tries` servers in all; with none left nginx answers 502;
- `add_header ... $upstream_addr` tells the client which server answered;
- `map $http_authorization $v { default 0; include FILE; }` with `if ($v = 0) { return 401 ...; }` in a location
  answers requests without one of the listed Authorization values with 401 (the include is read at start, so a key
  file nginx cannot read fails `nginx -t`).
Only the directives the wizard writes are understood; others are ignored, as they do not change this model.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from wizard.lab import inference_sim as st
from wizard.lab.commands import command
from wizard.lab.streams import CommandFailed, Ctx

SIM = st.SIM
CONF_DIR = "/etc/nginx/conf.d"


@dataclass
class Server:
    address: str
    max_fails: int = 1
    fail_timeout_s: float = 10.0
    fails: list[float] = field(default_factory=list)
    down_until: float = 0.0


@dataclass
class Site:
    port: int
    servers: list[Server]
    tries: int = 0  # 0: every server
    retry_on: tuple[str, ...] = ("error", "timeout")
    upstream_header: str | None = None
    accepted: set[str] | None = None  # lower-cased "authorization: bearer <key>" values; None: no key check
    guarded: str = "v1/"  # paths the key check covers
    next_index: int = 0
    time_scale: float = 1.0  # the lab's: fail_timeout passes in simulated seconds


@dataclass
class Running:
    proc: st.Proc
    sites: dict[int, Site]


def _maps(text: str, read: Callable[[str], str | None], errors: list[str]) -> dict[str, set[str]]:
    """map $http_authorization $VAR {...}: VAR -> the accepted header values (from the lines and the includes)."""
    maps: dict[str, set[str]] = {}
    for var, block in re.findall(r"map\s+\$http_authorization\s+\$(\S+)\s*\{(.*?)\n\}", text, re.S):
        lines = block.splitlines()
        for path in re.findall(r"^\s*include\s+([^;\s]+)\s*;", block, re.M):
            content = read(path)
            if content is None:
                errors.append(f'nginx: [emerg] open() "{path}" failed (2: No such file or directory)')
                continue
            lines += content.splitlines()
        maps[var] = {
            f"authorization: {value.lower()}"
            for value, result in re.findall(r'^\s*"([^"]+)"\s+(\S+)\s*;', "\n".join(lines), re.M)
            if result == "1"
        }
    return maps


def parse(text: str, read: Callable[[str], str | None] = lambda _: None) -> tuple[dict[int, Site], list[str]]:
    """Sites by listening port, and the errors `nginx -t` would report (``read`` opens included files)."""
    upstreams: dict[str, list[Server]] = {}
    errors: list[str] = []
    maps = _maps(text, read, errors)
    for name, block in re.findall(r"upstream\s+(\S+)\s*\{(.*?)\}", text, re.S):
        servers = []
        for line in re.findall(r"^\s*server\s+([^;]+);", block, re.M):
            words = line.split()
            opts = dict(w.split("=", 1) for w in words[1:] if "=" in w)
            fail_timeout = float(opts.get("fail_timeout", "10s").rstrip("s"))
            servers.append(Server(words[0], int(opts.get("max_fails", "1")), fail_timeout))
        upstreams[name] = servers
    sites: dict[int, Site] = {}
    for block in re.findall(r"\bserver\s*\{(.*?\n)\}", text, re.S):
        listen = re.search(r"listen\s+(?:[\d.]+:)?(\d+)\s*;", block)
        target = re.search(r"proxy_pass\s+http://([^/;\s]+)\s*;", block)
        if not listen or not target:
            continue
        if re.fullmatch(r"[\d.]+:\d+", target.group(1)):
            upstreams.setdefault(target.group(1), [Server(target.group(1))])  # one server, no upstream block
        if target.group(1) not in upstreams:
            errors.append(f'nginx: [emerg] host not found in upstream "{target.group(1)}"')
            continue
        guard = re.search(r"if\s*\(\$(\S+)\s*=\s*0\)\s*\{\s*return\s+401", block)
        tries = re.search(r"proxy_next_upstream_tries\s+(\d+)\s*;", block)
        retry = re.search(r"proxy_next_upstream\s+([^;]+);", block)
        header = re.search(r"add_header\s+(\S+)\s+\$upstream_addr", block)
        sites[int(listen.group(1))] = Site(
            int(listen.group(1)),
            upstreams[target.group(1)],
            int(tries.group(1)) if tries else 0,
            tuple(retry.group(1).split()) if retry else ("error", "timeout"),
            header.group(1) if header else None,
            maps.get(guard.group(1), set()) if guard else None,
        )
    return sites, errors


def _config(ctx: Ctx) -> tuple[dict[int, Site], list[str]]:
    sites: dict[int, Site] = {}
    errors: list[str] = []
    try:
        names = sorted(ctx.fs.listdir(CONF_DIR))
    except Exception:  # noqa: BLE001 - no conf.d: nothing configured
        names = []
    for name in names:
        if name.endswith(".conf"):
            found, bad = parse(ctx.fs.read_text(f"{CONF_DIR}/{name}"), lambda path: _read(ctx, path))
            sites.update(found)
            errors += [f"{e} in {CONF_DIR}/{name}" for e in bad]
    return sites, errors


def _read(ctx: Ctx, path: str) -> str | None:
    try:
        return ctx.fs.read_text(path)  # nginx's master reads its configuration as root
    except Exception:  # noqa: BLE001 - missing: `nginx -t` names it
        return None


def listening(host: Any, port: int) -> Site | None:
    running = st.world(host).nginx.get(host.name)
    if running is None or not running.proc.alive():
        return None
    return running.sites.get(port)


Forward = Callable[[str, str, list[str], str | None], Awaitable[Any]]


def _pick(site: Site, now: float, tried: set[str]) -> Server | None:
    for _ in range(len(site.servers)):
        server = site.servers[site.next_index % len(site.servers)]
        site.next_index += 1
        if server.address not in tried and server.down_until <= now:
            return server
    return None


async def proxy(site: Site, path: str, headers: list[str], body: str | None, forward: Forward) -> Any:
    """One request through the site: round-robin, passive health, retries on the next server."""
    from wizard.lab.cmd_http import Reply

    if site.accepted is not None and path.startswith(site.guarded) and not site.accepted & set(headers):
        return Reply(401, '{"error":"Unauthorized"}')
    tried: set[str] = set()
    limit = site.tries or len(site.servers)
    while len(tried) < limit:
        now = time.monotonic()
        server = _pick(site, now, tried)
        if server is None:
            break
        tried.add(server.address)
        reply = await forward(server.address, path, headers, body)
        failed = reply is None or (reply.status in (502, 503) and f"http_{reply.status}" in site.retry_on)
        if not failed:
            if site.upstream_header:
                reply.headers[site.upstream_header] = server.address
            return reply
        window = server.fail_timeout_s * site.time_scale
        server.fails = [t for t in server.fails if now - t < window] + [now]
        if len(server.fails) >= server.max_fails:
            server.down_until = now + window
    return Reply(502, "<html><head><title>502 Bad Gateway</title></head></html>")


@command("nginx")
async def nginx(ctx: Ctx) -> int:
    args = ctx.args
    if args[:1] == ["-v"]:
        ctx.eprint("nginx version: nginx/1.18.0 (Ubuntu)")
        return 0
    sites, errors = _config(ctx)
    if "-t" in args:
        if errors:
            ctx.eprint("\n".join(errors) + "\nnginx: configuration file /etc/nginx/nginx.conf test failed")
            return 1
        if "-q" not in args:
            ctx.eprint("nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\n"
                       "nginx: configuration file /etc/nginx/nginx.conf test is successful")  # fmt: skip
        return 0
    if errors:
        raise CommandFailed("\n".join(errors))
    unit, pid, env, memlock = st.unit_context(ctx)
    proc = st.Proc(ctx.host, unit, pid, env, memlock)
    for site in sites.values():
        site.time_scale = ctx.host.time_scale
    st.world(ctx.host).nginx[ctx.host.name] = Running(proc, sites)
    from wizard.lab.cmd_inference_engines import _park

    return await _park(proc, True)
