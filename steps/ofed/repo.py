"""Package sources for the ofed stage: NVIDIA's online repositories or an air-gapped local repository."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from steps.ofed import support as sup
from steps.ofed.facts import OfedFacts
from wizard.answers.sections import OfedSection
from wizard.engine.step import Change, FileWrite, RemoteCommand

# Keys of third-party repositories live in /etc/apt/keyrings and only the source that names them with signed-by
# trusts them; a key in /etc/apt/trusted.gpg.d is trusted for every repository, so signed-by restricts nothing
# (Debian wiki DebianRepository/UseThirdParty; sources.list(5) Signed-By). NVIDIA's DOCA page writes the key to
# trusted.gpg.d: the wizard does not, and moves a key it finds there (LEGACY_DOCA_KEYRING).
KEYRING_DIR = "/etc/apt/keyrings"
DOCA_LIST = "/etc/apt/sources.list.d/doca.list"
DOCA_KEYRING = f"{KEYRING_DIR}/GPG-KEY-Mellanox.gpg"
LEGACY_DOCA_KEYRING = "/etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub"
MLNX_LIST = "/etc/apt/sources.list.d/mellanox_mlnx_ofed.list"
# NVIDIA's downloaded mellanox_mlnx_ofed.list has no signed-by: apt verifies it only with a trusted.gpg.d key.
MLNX_KEYRING = "/etc/apt/trusted.gpg.d/mellanox-mlnx-ofed.gpg"
LOCAL_LIST = "/etc/apt/sources.list.d/roce-wizard-local-ofed.list"
LOCAL_KEYRING = f"{KEYRING_DIR}/roce-wizard-local-ofed.gpg"
MANAGED_FILES = (DOCA_LIST, MLNX_LIST, LOCAL_LIST)
KEYRINGS = (DOCA_KEYRING, LEGACY_DOCA_KEYRING, MLNX_KEYRING, LOCAL_KEYRING)
KEYRING_DIRS = ("/etc/apt/trusted.gpg.d", KEYRING_DIR)
_DOCA_DEB_RE = re.compile(r"doca-host[_-](\d+\.\d+\.\d+)")


@dataclass
class RepoSetup:
    """Files and commands that make the stack's packages installable, plus what to tell the operator."""

    keys: list[RemoteCommand] = field(default_factory=list)  # import the signing key before any list names it
    files: list[FileWrite] = field(default_factory=list)
    commands: list[RemoteCommand] = field(default_factory=list)
    description: str = ""
    blockers: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.keys and not self.files and not self.commands


def apt(*args: str, timeout_s: float | None = None) -> RemoteCommand:
    """apt-get without prompts (a conffile question would hang an unattended install)."""
    return RemoteCommand(argv=["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", *args], timeout_s=timeout_s)


def _keyring_dir(keyring: str) -> list[RemoteCommand]:
    # apt >= 2.4 (Ubuntu 22.04, Debian 12) ships /etc/apt/keyrings; older releases need it created first.
    if not keyring.startswith(KEYRING_DIR + "/"):
        return []
    return [RemoteCommand(argv=["install", "-d", "-m", "0755", KEYRING_DIR])]


def _fetch_key(url: str, keyring: str) -> list[RemoteCommand]:
    # The docs pipe `curl URL | gpg --dearmor > KEYRING`; the same in two argv commands, without a shell pipeline.
    download = "/tmp/roce-wizard-" + url.rsplit("/", 1)[-1]
    return _keyring_dir(keyring) + [
        RemoteCommand(argv=["curl", "-fsSL", "-o", download, url], timeout_s=120),
        RemoteCommand(argv=["gpg", "--batch", "--yes", "--dearmor", "-o", keyring, download]),
    ]


def _list_file(path: str, line: str, facts: OfedFacts) -> list[FileWrite]:
    content = f"# written by roce-wizard (stage ofed)\n{line}\n"
    before = facts.files.get(path)
    return [] if before == content else [FileWrite(path=path, content=content, mode=0o644, before=before)]


def repo_setup(ofed: OfedSection, facts: OfedFacts, os_label: str, *, fresh: bool) -> RepoSetup:
    """What makes doca-ofed / mlnx-ofed-basic installable; ``fresh``: an uninstall runs first (it removes doca-host)."""
    if ofed.source == "local":
        return _local(ofed, facts, fresh=fresh)
    arch = sup.repo_arch(facts.arch)
    if arch is None:
        return RepoSetup(blockers=[f"NVIDIA publishes no repository for CPU architecture {facts.arch or 'unknown'}"])
    if ofed.stack == "doca":
        return _doca_online(ofed, facts, os_label, arch)
    return _mlnx_online(ofed, facts, os_label)


def _doca_online(ofed: OfedSection, facts: OfedFacts, os_label: str, arch: str) -> RepoSetup:
    # Repository line and key exactly as the DOCA downloads page gives them for "Host Server / DOCA-Host / Linux /
    # <arch> / doca-ofed / Ubuntu / <ver> / deb(online)"; docs.nvidia.com/doca/sdk/DOCA-Host+Installation+and+Upgrade
    # ("Upgrading Software on Host", online repo).
    url = sup.DOCA_REPO_URL.format(version=ofed.doca_version, os=os_label, arch=arch)
    setup = RepoSetup(description=f"NVIDIA's online DOCA repository {url}")
    if DOCA_KEYRING not in facts.keyrings:
        setup.keys += _fetch_key(sup.DOCA_KEY_URL, DOCA_KEYRING)
    setup.files += _list_file(DOCA_LIST, f"deb [signed-by={DOCA_KEYRING}] {url} ./", facts)
    if LEGACY_DOCA_KEYRING in facts.keyrings:
        setup.commands.append(_drop_legacy_key())
    if not setup.empty:
        setup.commands.append(apt("update"))
    return setup


def _drop_legacy_key() -> RemoteCommand:
    return RemoteCommand(argv=["rm", "-f", LEGACY_DOCA_KEYRING])


def move_legacy_doca_key(ofed: OfedSection, facts: OfedFacts) -> Change | None:
    """On an installed host whose DOCA key is in trusted.gpg.d: import it into /etc/apt/keyrings, point doca.list
    at it and delete the globally trusted copy (nothing else about the installed stack changes)."""
    listing = facts.files.get(DOCA_LIST) or ""
    if ofed.stack != "doca" or ofed.source != "vendor" or LEGACY_DOCA_KEYRING not in facts.keyrings:
        return None
    if LEGACY_DOCA_KEYRING not in listing:
        return None
    keys = [] if DOCA_KEYRING in facts.keyrings else _fetch_key(sup.DOCA_KEY_URL, DOCA_KEYRING)
    return Change(
        summary=f"Move NVIDIA's package signing key from /etc/apt/trusted.gpg.d to {KEYRING_DIR}",
        why=f"apt trusts a key in /etc/apt/trusted.gpg.d for every repository, so doca.list's signed-by restricts "
        f"nothing (Debian wiki DebianRepository/UseThirdParty); in {KEYRING_DIR} only doca.list trusts it",
        files=[
            FileWrite(
                path=DOCA_LIST,
                content=listing.replace(LEGACY_DOCA_KEYRING, DOCA_KEYRING),
                mode=0o644,
                before=listing,
            )
        ],
        commands=[*keys, _drop_legacy_key(), apt("update")],
    )


def _mlnx_online(ofed: OfedSection, facts: OfedFacts, os_label: str) -> RepoSetup:
    # MLNX_OFED User Manual, "Installing MLNX_OFED Using apt-get": fetch mellanox_mlnx_ofed.list for the release and
    # OS, trust RPM-GPG-KEY-Mellanox (here as a keyring file in trusted.gpg.d rather than the deprecated apt-key).
    url = sup.MLNX_OFED_LIST_URL.format(version=ofed.mlnx_ofed_version, os=os_label)
    setup = RepoSetup(description=f"NVIDIA's online MLNX_OFED repository ({url})")
    if MLNX_KEYRING not in facts.keyrings:
        setup.keys += _fetch_key(sup.MLNX_OFED_KEY_URL, MLNX_KEYRING)
    if f"/mlnx_ofed/{ofed.mlnx_ofed_version}/" not in (facts.files.get(MLNX_LIST) or ""):
        setup.commands.append(RemoteCommand(argv=["curl", "-fsSL", "-o", MLNX_LIST, url], timeout_s=120))
    if setup.commands or setup.keys:
        setup.commands.append(apt("update"))
    return setup


def _local(ofed: OfedSection, facts: OfedFacts, *, fresh: bool) -> RepoSetup:
    repo = facts.local_repo
    path = ofed.local_repo or ""
    if repo is None or repo.kind == "missing":
        return RepoSetup(blockers=[f"local_repo {path} is not on the host; copy it there (same path on every host)"])
    if repo.kind == "deb":
        return _local_deb(ofed, facts, path, fresh=fresh)
    if not repo.indexed:
        return RepoSetup(
            blockers=[f"local_repo {path} is a directory without Packages/Packages.gz: not a Debian repository"]
        )
    setup = RepoSetup(description=f"the local repository {path}")
    if repo.signed:
        if LOCAL_KEYRING not in facts.keyrings:
            setup.keys += _keyring_dir(LOCAL_KEYRING)
            setup.keys.append(
                RemoteCommand(
                    argv=["gpg", "--batch", "--yes", "--dearmor", "-o", LOCAL_KEYRING, f"{path}/GPG-KEY-Mellanox.pub"]
                )
            )
        line = f"deb [signed-by={LOCAL_KEYRING}] file:{path} ./"
    else:
        setup.description += " (unsigned: added as [trusted=yes]; keep it root-owned)"
        line = f"deb [trusted=yes] file:{path} ./"
    setup.files += _list_file(LOCAL_LIST, line, facts)
    if not setup.empty:
        setup.commands.append(apt("update"))
    return setup


def _local_deb(ofed: OfedSection, facts: OfedFacts, path: str, *, fresh: bool) -> RepoSetup:
    # DOCA-Host Installation and Upgrade, "Installing Software on Host" (deb-based): dpkg -i <local repo .deb>,
    # apt-get update, apt-get -y install doca-ofed.
    match = _DOCA_DEB_RE.search(path.rsplit("/", 1)[-1])
    if match and match.group(1) != ofed.doca_version:
        return RepoSetup(
            blockers=[
                f"local_repo {path} is DOCA {match.group(1)} but ofed.doca_version is {ofed.doca_version}; set"
                f" doca_version: {match.group(1)!r} or point local_repo at the {ofed.doca_version} package"
            ]
        )
    setup = RepoSetup(description=f"the DOCA local-repo package {path}")
    have = facts.installed("doca-host")
    if fresh or not have or sup.doca_package_version(have) != ofed.doca_version:
        setup.commands += [RemoteCommand(argv=["dpkg", "-i", path]), apt("update")]
    return setup
