"""Hosts that answer strangely: a German locale, a sudo lecture, a chatty login shell, a tool missing from PATH.

The behaviour of the lab faults ``locale``, ``sudo_lecture``, ``motd`` and ``missing`` (wizard/lab/faults.py). Each
is reached through one small hook elsewhere in the lab, so the rest of the simulator stays unaware of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from wizard.lab.streams import Sink

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

DEFAULT_LOCALE = "de_DE.UTF-8"
DEFAULT_MOTD = "Willkommen auf {name}! Wartungsfenster: Dienstag 02:00-04:00"

# What a German system prints instead of the English text (messages translated through gettext): ethtool's link
# settings are what discovery parses for link state and speed.
_GERMAN: dict[str, tuple[tuple[str, str], ...]] = {
    "ethtool": (
        ("Settings for ", "Einstellungen für "),
        ("Link detected: yes", "Verbindung erkannt: ja"),
        ("Link detected: no", "Verbindung erkannt: nein"),
        ("Speed: ", "Geschwindigkeit: "),
        ("Duplex: Full", "Duplex: Voll"),
        ("Unknown!", "Unbekannt!"),
    ),
    "date": (("Mon ", "Mo "), ("Tue ", "Di "), ("Wed ", "Mi "), ("Thu ", "Do "), ("Fri ", "Fr ")),
}

LECTURE = (
    "\nWe trust you have received the usual lecture from the local System\n"
    "Administrator. It usually boils down to these three things:\n\n"
    "    #1) Respect the privacy of others.\n"
    "    #2) Think before you type.\n"
    "    #3) With great power comes great responsibility.\n\n"
)


def message_locale(env: Mapping[str, str]) -> str:
    """The locale messages are printed in, as glibc picks it: LC_ALL, then LC_MESSAGES, then LANG."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if env.get(name):
            return env[name]
    return "C"


def login_env(host: SimHost) -> dict[str, str]:
    """Variables the ``locale`` fault adds to every login session (what /etc/default/locale sets)."""
    fault = host.fault("locale")
    return {"LANG": fault.arg or DEFAULT_LOCALE} if fault else {}


class _Translating(Sink):
    def __init__(self, inner: Sink, table: tuple[tuple[str, str], ...]) -> None:
        self.inner = inner
        self.table = table

    def write(self, text: str) -> None:
        for english, german in self.table:
            text = text.replace(english, german)
        self.inner.write(text)

    def close(self) -> None:
        self.inner.close()


def localised(host: SimHost, tool: str, env: Mapping[str, str], out: Sink) -> Sink:
    """``out``, translating ``tool``'s messages when the host has the ``locale`` fault and the command's locale is
    German (LC_ALL=C or LC_MESSAGES=C turns it back into English, as on a real host)."""
    table = _GERMAN.get(tool)
    if table is None or host.fault("locale") is None or not message_locale(env).startswith("de"):
        return out
    return _Translating(out, table)


def login_noise(host: SimHost, out: Sink) -> None:
    """The ``motd`` fault: ~/.bashrc echoes a banner on stdout for every session, exec sessions included."""
    fault = host.fault("motd")
    if fault is not None:
        out.write((fault.arg or DEFAULT_MOTD).format(name=host.name) + "\n")


def sudo_lecture(host: SimHost, err: Sink) -> None:
    """The ``sudo_lecture`` fault: the first sudo of a non-root user prints the lecture on stderr, once."""
    if host.fault("sudo_lecture") is None or getattr(host, "sudo_lectured", False):
        return
    host.sudo_lectured = True  # type: ignore[attr-defined]
    err.write(LECTURE)


def hidden(host: SimHost, name: str) -> bool:
    """The ``missing=TOOL`` fault: TOOL is not found on any PATH (exit 127), as if its package were absent."""
    return any(f.kind == "missing" and f.arg == name for f in host.faults)
