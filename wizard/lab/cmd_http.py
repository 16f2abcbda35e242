"""Simulated HTTP on the lab hosts: curl to a local engine API or to nginx, and the engines' answers.

curl reaches 127.0.0.1/localhost only (the wizard never sends traffic to the answers' addresses itself; anything
else goes to the lab's own curl, which has no network), plus PyPI's JSON API. A port nginx listens on is proxied
(wizard/lab/nginx_sim.py); any other port is the engine's own API.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import pkgutil
from dataclasses import dataclass, field

from wizard.lab import commands as commands_pkg
from wizard.lab import inference_sim as st
from wizard.lab import nginx_sim
from wizard.lab.commands import REGISTRY, command
from wizard.lab.streams import CommandFailed, Ctx

SIM = st.SIM


def _base_curl() -> object:
    for info in pkgutil.iter_modules(commands_pkg.__path__):
        importlib.import_module(f"{commands_pkg.__name__}.{info.name}")
    return REGISTRY["curl"]


_original = _base_curl()


@dataclass
class Reply:
    status: int
    text: str
    seconds: float = 0.002
    headers: dict[str, str] = field(default_factory=dict)
    first_byte_s: float | None = None  # curl's time_starttransfer: a streamed completion's first token


async def engine_answer(ep: st.Endpoint, path: str, headers: list[str], body: str | None) -> Reply:
    """What vLLM's (or SGLang's) OpenAI server answers; /health is open, /v1/* needs the key when one is set."""
    if path == "health":
        return Reply(200, "")
    if path.startswith("v1/") and ep.api_key and f"authorization: bearer {ep.api_key}" not in headers:
        return Reply(401, '{"error":"Unauthorized"}')  # vLLM's API-key middleware answer for /v1/* without the key
    if path == "v1/models":
        return Reply(200, json.dumps({"object": "list", "data": [{"id": ep.model, "object": "model"}]}))
    if path == "v1/completions" and body:
        ep.in_flight += 1
        try:
            await asyncio.sleep(0.02)  # lets concurrent requests overlap
            request = json.loads(body)
            status, doc, seconds = st.completion(ep, request)
        finally:
            ep.in_flight -= 1
        first = doc.pop("_first_token_s", None)
        if status == 200 and request.get("stream"):
            # Server-sent events as vLLM/SGLang stream them: one chunk per token, then [DONE].
            chunk = {k: v for k, v in doc.items() if k != "usage"}
            text = "".join(f"data: {json.dumps(chunk)}\n\n" for _ in range(min(4, doc["usage"]["completion_tokens"])))
            return Reply(status, text + "data: [DONE]\n\n", seconds, first_byte_s=first)
        return Reply(status, json.dumps(doc), seconds, first_byte_s=seconds)
    return Reply(404, '{"detail":"Not Found"}')


def endpoint(host: object, port: int) -> st.Endpoint | None:
    """The serving engine on ``host`` and ``port``, if one is up and ready."""
    ep = st.world(host).endpoints.get((host.name, port))  # type: ignore[attr-defined]
    return ep if ep is not None and ep.proc.alive() and ep.ready else None


async def request(host: object, port: int, path: str, headers: list[str], body: str | None) -> Reply | None:
    """One request to 127.0.0.1:``port`` on ``host``; None when nothing listens there (connection refused)."""
    proxy = nginx_sim.listening(host, port)
    if proxy is not None:

        async def upstream(address: str, path: str, headers: list[str], body: str | None) -> Reply | None:
            return await forward(host, address, path, headers, body)

        return await nginx_sim.proxy(proxy, path, headers, body, upstream)
    ep = endpoint(host, port)
    return await engine_answer(ep, path, headers, body) if ep is not None else None


async def forward(origin: object, address: str, path: str, headers: list[str], body: str | None) -> Reply | None:
    """nginx's upstream request from ``origin`` to ``ip:port`` on a lab host (None: connection refused)."""
    ip, _, port = address.rpartition(":")
    if ip == "127.0.0.1":  # the host's own loopback (SGLang behind its nginx front)
        ep = endpoint(origin, int(port))
        return await engine_answer(ep, path, headers, body) if ep is not None else None
    lab = getattr(origin, "lab", None)
    for host in lab.hosts.values() if lab is not None else [origin]:
        if st.host_has_ip(host, ip):
            return await request(host, int(port), path, headers, body)  # that host's nginx, or its engine
    return None


@command("curl")
async def curl(ctx: Ctx) -> int:
    pypi = next((a for a in ctx.args if a.startswith("https://pypi.org/pypi/") and a.endswith("/json")), None)
    if pypi is not None:  # PyPI's JSON API (https://docs.pypi.org/api/json/), trimmed to what clients read
        name = pypi.split("/")[4].lower()
        if name not in st.LATEST:
            raise CommandFailed("curl: (22) The requested URL returned error: 404", 22)
        ctx.print(json.dumps({"info": {"name": name, "version": st.LATEST[name]}, "simulated": SIM}))
        return 0
    url = next((a for a in ctx.args if a.startswith(("http://127.0.0.1:", "http://localhost:"))), None)
    if url is None:
        return await _original(ctx)  # type: ignore[operator]
    args, opts, flags, headers = list(ctx.args), {}, "", []
    while args:
        a = args.pop(0)
        if a in ("-H", "--header") and args:
            headers += _headers(ctx, args.pop(0))
        elif a in ("-d", "--data", "--data-raw", "-w", "--write-out", "-X", "--request",
                 "--max-time", "-m", "-o", "--output", "-D", "--dump-header") and args:  # fmt: skip
            opts[a] = args.pop(0)
        elif a.startswith("-") and not a.startswith("--"):
            flags += a[1:]
        elif a == "--fail":
            flags += "f"
    port_text, _, path = url.split(":", 2)[2].partition("/")
    body = opts.get("-d") or opts.get("--data") or opts.get("--data-raw")
    reply = await request(ctx.host, int(port_text), path, headers, body)
    if reply is None:
        if "S" in flags or "s" not in flags:
            ctx.eprint(f"curl: (7) Failed to connect to 127.0.0.1 port {port_text} after 0 ms: Connection refused")
        return 7
    if "f" in flags and reply.status >= 400:
        if "S" in flags or "s" not in flags:
            ctx.eprint(f"curl: (22) The requested URL returned error: {reply.status}")
        return 22
    if (opts.get("-D") or opts.get("--dump-header")) == "-":
        head = [f"HTTP/1.1 {reply.status}", "content-type: application/json"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        ctx.out.write("\r\n".join(head) + "\r\n\r\n")
    output = opts.get("-o") or opts.get("--output")
    if output is None:
        ctx.out.write(reply.text)
    elif output != "/dev/null":
        ctx.fs.install(ctx.path(output), reply.text)
    fmt = opts.get("-w") or opts.get("--write-out")
    if fmt:
        fmt = fmt.replace("\\n", "\n").replace("%{http_code}", str(reply.status))
        first = reply.first_byte_s if reply.first_byte_s is not None else reply.seconds
        fmt = fmt.replace("%{time_starttransfer}", f"{first:.6f}")
        ctx.out.write(fmt.replace("%{time_total}", f"{reply.seconds:.6f}"))
    return 0


def _headers(ctx: Ctx, value: str) -> list[str]:
    """-H VALUE, or -H @FILE: one header per line of the file (curl >= 7.55.0, curl(1) --header), lower-cased."""
    if not value.startswith("@"):
        return [value.strip().lower()]
    try:
        text = ctx.fs.read_text(value[1:], ctx.cred, ctx.cwd)
    except Exception:  # noqa: BLE001 - unreadable (0600 root, not root) or missing: curl reads nothing
        raise CommandFailed(f"curl: (26) Failed to open/read local data from file/application {SIM}", 26) from None
    return [line.strip().lower() for line in text.splitlines() if line.strip()]
