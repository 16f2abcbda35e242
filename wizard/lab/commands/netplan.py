"""netplan generate / apply / get."""

from __future__ import annotations

import yaml

from wizard.lab import netplan as np
from wizard.lab.commands import command
from wizard.lab.streams import CommandFailed, Ctx


@command("netplan")
async def netplan(ctx: Ctx) -> int:
    words = [a for a in ctx.args if not a.startswith("-")]
    verb = words[0] if words else "help"
    if verb not in ("generate", "apply", "get", "try", "info"):
        raise CommandFailed(f"netplan: error: argument : invalid choice: '{verb}'", 2)
    if verb == "info":
        ctx.print("netplan.io:\n  website: https://netplan.io/\n  features:\n  - dhcp-use-domains\n  - default-routes")
        return 0
    if verb in ("generate", "apply", "try") and not ctx.root:
        raise CommandFailed(
            "Permission denied when writing to /run/systemd/network: netplan apply/generate must run as root", 1
        )
    try:
        cfg, warnings = np.load(ctx.host, ctx.cred)
    except np.NetplanError as exc:
        raise CommandFailed(str(exc), 1) from None
    for w in warnings:
        ctx.eprint(w)
    if verb == "get":
        ctx.out.write(yaml.safe_dump(cfg or {"network": {"version": 2}}, default_flow_style=False, sort_keys=False))
        return 0
    if verb == "try":
        raise CommandFailed("netplan try needs a terminal; use netplan apply", 1)
    if verb == "apply":
        np.apply(ctx.host, cfg)
    return 0
