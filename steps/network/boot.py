"""Why the rails did not come back at boot: what systemd-networkd configured each of them with.

netplan writes its configuration at boot as /run/systemd/network/10-netplan-<name>.network (netplan generate, run
by its systemd generator), and systemd-networkd configures each link with the FIRST .network file, in file-name
order over /etc, /run and /lib, whose [Match] fits it (systemd.network(5)). A hand-written file left from before
netplan, such as /etc/systemd/network/10-eth3.network, sorts before netplan's and wins at every boot; it does
nothing while the system runs, so only a reboot shows it. And with systemd-networkd disabled, nothing applies the
netplan configuration at boot at all.

``networkctl status`` prints, per link, the ``Network File:`` it was configured with ("n/a" for none); the
wizard reads that (and whether systemd-networkd is enabled) and parses it here.
"""

from __future__ import annotations

import re
from typing import Any

from steps.network.renderer import definitions

NETPLAN_PREFIX = "/run/systemd/network/10-netplan-"
_HEADER = re.compile(r"^\S*\s*\d+: (\S+)\s*$")
_FILE = re.compile(r"^\s*Network File: (.+?)\s*$")


def network_files(text: str) -> dict[str, str | None]:
    """``networkctl status LINK...``: link -> the .network file it was configured with (None for n/a)."""
    found: dict[str, str | None] = {}
    link = None
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            link = header.group(1)
            found.setdefault(link, None)
            continue
        match = _FILE.match(line)
        if match and link is not None:
            found[link] = None if match.group(1) == "n/a" else match.group(1)
    return found


def managed_links(netplan_text: str | None) -> list[str]:
    """The links the wizard's netplan file defines (its ethernets and bonds)."""
    if not netplan_text:
        return []
    return sorted(definitions({"ours.yaml": netplan_text}))


def boot_causes(links: list[str], files: dict[str, str | None], networkd_enabled: str) -> list[str]:
    """What stopped netplan's configuration from reaching ``links`` at boot."""
    causes = []
    if networkd_enabled not in ("enabled", "enabled-runtime", "static", "alias", "indirect", ""):
        causes.append(
            f"systemd-networkd.service is {networkd_enabled}: nothing applies netplan's configuration at boot"
        )
    for link in links:
        file = files.get(link)
        if link in files and file is None:
            causes.append(f"systemd-networkd configured {link} with no .network file at boot (netplan's generator "
                          "wrote none for it: run `netplan generate` and read its errors)")  # fmt: skip
        elif file and not file.startswith(NETPLAN_PREFIX):
            causes.append(
                f"at boot systemd-networkd configured {link} with {file}, not with netplan's "
                f"{NETPLAN_PREFIX}{link}.network: the first matching .network file in name order wins "
                "(systemd.network(5)); remove that file or give it a name that sorts after netplan's"
            )
    return causes


async def read_boot_causes(executor: Any, netplan_text: str | None) -> list[str]:
    """Ask the host (read-only) why its links did not get netplan's configuration at this boot."""
    links = managed_links(netplan_text)
    if not links:
        return []
    status = await executor.run(["networkctl", "status", "--no-pager", "--", *links], timeout_s=30)
    enabled = await executor.run(["systemctl", "is-enabled", "systemd-networkd.service"], timeout_s=30)
    if status.exit_status not in (0, 1) and not status.stdout:
        return []  # no networkctl (NetworkManager hosts): nothing to say here
    return boot_causes(links, network_files(status.stdout), enabled.stdout.strip())
