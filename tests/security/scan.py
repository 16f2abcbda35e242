"""Finding secret values in files and text, in the plain and in the base64 forms a transfer might leave."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path


def forms(secret: str) -> list[str]:
    """The secret itself and its base64 at every byte alignment (a file pushed as base64 inside a longer text)."""
    raw = secret.encode()
    found = [secret]
    for shift in range(3):
        # Drop the edge characters, which depend on the bytes around the secret.
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        found.append(encoded[4 if shift else 0 : -4])
    return [f for f in found if len(f) >= 12]


def hits(secret: str, texts: dict[str, str]) -> list[str]:
    """Names of the texts holding the secret in any form."""
    wanted = forms(secret)
    return sorted(name for name, text in texts.items() if any(f in text for f in wanted))


def files_under(*roots: Path, skip: Iterable[Path] = ()) -> dict[str, str]:
    """Every regular file under ``roots`` (except under ``skip``) as text, by path."""
    skipped = [s.resolve() for s in skip]
    out: dict[str, str] = {}
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in paths:
            if not any(path.resolve().is_relative_to(s) for s in skipped):
                out[str(path)] = path.read_bytes().decode("utf-8", errors="replace")
    return out


def disk_file(image: Path, path: str) -> tuple[bytes, int]:
    """Content and mode of ``path`` on a simulated host's saved disk image (wizard/lab/disk.py, JSON)."""
    node = json.loads(image.read_text())["tree"]
    parts = path.strip("/").split("/")
    node = node[parts[0]]
    for part in parts[1:]:
        node = node["c"][part]
    return base64.b64decode(node["data"]), node["mode"]
