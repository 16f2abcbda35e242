"""Per-page help from assets/help/<page>.md, plus the keys that work everywhere."""

from __future__ import annotations

from wizard.paths import assets_dir

KEYS = """
## Keys

| key | what it does |
|---|---|
| n / b | next / back |
| a | apply the stage (asks before disruptive changes) |
| v | verify only: read the hosts and run the checks, change nothing |
| p | plan: what would change, per host, with file diffs |
| s | skip the stage (recorded; a later run re-checks it) |
| u | roll the stage back: put back the files it replaced, remove those it created (shows the commands first) |
| 1-5 | plan, checks, logs, answers, help tabs |
| [ / ] | previous / next host in the log pane |
| h | find a host by name (type part of it) and show it on this page |
| / | filter the list: host, address, port, switch, check or evidence words (all must match) |
| f | failed only (hosts, discovery, a stage's plan / checks / logs, summary) |
| g | group by leaf switches (every rail's LLDP neighbour, 'leaf-r0..r7'; hosts, discovery, summary) |
| L | open the full log of the shown host |
| ctrl+s | save the answers file for headless replay |
| B | (summary) bandwidth test between the hosts, per rail |
| ctrl+p | command palette: jump anywhere, save, open logs |
| escape | leave a text field |
| q | quit (progress is saved; run again to resume) |
"""


def help_markdown(page: str) -> str:
    """The help text of one page (what it does and why), followed by the key list."""
    path = assets_dir() / "help" / f"{page}.md"
    body = path.read_text(encoding="utf-8") if path.exists() else f"# {page}\n\nNo help written for this page yet."
    return body.rstrip() + "\n" + KEYS
