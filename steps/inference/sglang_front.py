"""SGLang's API behind an authenticating nginx on the same host, so its key is on no command line and in no log.

SGLang reads its API key only from `--api-key` (or its `--config` YAML) and logs every server argument at start
(`logger.info(f"{server_args=}")` in sglang/srt/entrypoints/engine.py), key included: a key given to SGLang
ends up in `/proc/<pid>/cmdline`, `systemctl status` and the journal. So SGLang gets no key and listens on
127.0.0.1 only; nginx listens where the API should (api_host:port), answers /v1/* without
`Authorization: Bearer <key>` with 401 as vLLM does, and passes /health and everything else to SGLang. nginx reads
the key from a 0600 root file included into its configuration (nginx reads configuration as root, and logs no
request headers).
"""

from __future__ import annotations

from steps.inference.layout import Layout
from steps.inference.units import HEADER, KEY_NGINX, sglang_internal_port
from wizard.engine.step import ClusterView

SGLANG_CONF = "/etc/nginx/conf.d/roce-wizard-sglang.conf"


def fronted(view: ClusterView, layout: Layout, host: str) -> bool:
    """``host`` serves SGLang's API, so it needs the front."""
    node = layout.node(host)
    return view.answers.inference.engine == "sglang" and node is not None and node in layout.api_nodes()


def front_conf(view: ClusterView) -> str:
    cfg = view.answers.inference
    listen = f"{cfg.port}" if cfg.api_host in ("0.0.0.0", "::") else f"{cfg.api_host}:{cfg.port}"
    upstream = f"http://127.0.0.1:{sglang_internal_port(cfg)}"
    return (
        f"{HEADER}"
        f"# SGLang's API for {cfg.model}: SGLang itself listens on 127.0.0.1 without a key; this checks it.\n"
        "map $http_authorization $roce_wizard_sglang_key_ok {\n"
        "    default 0;\n"
        f"    include {KEY_NGINX};  # '\"Bearer <key>\" 1;', 0600 root\n"
        "}\n"
        "server {\n"
        f"    listen {listen};\n"
        "    location = /health {\n"
        f"        proxy_pass {upstream};\n"
        "    }\n"
        "    location /v1/ {\n"
        "        if ($roce_wizard_sglang_key_ok = 0) {\n"
        '            return 401 \'{"error":"Unauthorized"}\';\n'
        "        }\n"
        f"        proxy_pass {upstream};\n"
        "        proxy_http_version 1.1;\n"
        "        proxy_buffering off;\n"
        "        proxy_read_timeout 600s;\n"
        "    }\n"
        "}\n"
    )
