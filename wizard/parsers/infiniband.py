"""Parsers for the read-only InfiniBand fabric diagnostics: sminfo, iblinkinfo, ibnetdiscover and the port files the
kernel keeps under /sys/class/infiniband.

Discovery runs them on each host of an InfiniBand fabric to learn whether a subnet manager answers, which switch port
each HCA port is cabled to, and at what width and speed each link trained. The three infiniband-diags tools fail in
one shape (`ibwarn:` lines, then `TOOL: iberror: failed: REASON`) when the host has no usable MAD port or no SM
answers. That is a finding about the host, not unreadable text, so it comes back in the model (`error`, `failure`)
instead of as a ParseError; only text that is neither the output nor the failure of the tool is refused.
"""

from __future__ import annotations

import re
from typing import Literal

from wizard.parsers._text import prompt_command, require_lines, to_int
from wizard.parsers.common import Parsed, ParseError

NodeType = Literal["Switch", "CA", "Router"]
# no_mad_port: no ib_umad device, a RoCE-only port or no permission; no_sm_response: the SMInfo query went unanswered.
FailureKind = Literal["no_mad_port", "no_sm_response", "discovery_failed", "other"]

# Per-lane signalling rate as iblinkinfo prints it (libibmad dump.c: mad_dump_linkspeed/linkspeedext/linkspeedext2).
_LANE_GBPS: dict[str, float] = {
    "SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0625, "EDR": 25.78125, "HDR": 53.125,
    "NDR": 106.25, "XDR": 212.5,
}  # fmt: skip
_LANE_LABEL = {gbps: label for label, gbps in _LANE_GBPS.items() if label != "FDR10"}
# Data rate per lane, as the kernel's rate_show and ibstat count a link (drivers/infiniband/core/sysfs.c).
_LANE_DATA_GBPS: dict[str, float] = {
    "SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0, "NDR": 100.0,
    "XDR": 200.0,
}  # fmt: skip


def link_rate_gbps(width: str | None, speed_label: str | None) -> float | None:
    """The data rate of a link (4X HDR -> 200.0), the number ibstat's `Rate:` and sysfs `rate` show."""
    lanes = _lanes(width)
    per_lane = _LANE_DATA_GBPS.get(speed_label or "")
    return lanes * per_lane if lanes and per_lane else None


def _lanes(width: str | None) -> int | None:
    return int(width[:-1]) if width and width[:-1].isdigit() else None


_HEX_GUID = re.compile(r"^(?:0x)?([0-9a-fA-F]{1,16})$")


def normalize_guid(text: str) -> str:
    """Spell a GUID as 0x plus 16 lowercase hex digits, however the tool printed it.

    sminfo drops leading zeros (0x2c9030037a2f1), ibnetdiscover prints port GUIDs bare in parentheses (8f10403960985)
    and node ids as S-/H-/R- plus 16 digits: comparing them needs one spelling. Anything that is not a GUID (a paste
    with `9c05<redacted>`) comes back lowercased as printed.
    """
    value = text.strip()
    if value[:2].upper() in ("S-", "H-", "R-"):
        value = value[2:]
    match = _HEX_GUID.match(value)
    return f"0x{int(match.group(1), 16):016x}" if match else value.lower()


# ------------------------------------------------------------------------------------ failures of the MAD tools

_IBWARN = re.compile(r"^\s*ibwarn: \[\d+\] (?P<msg>.*)$")
_IBERROR = re.compile(r"^\s*(?P<tool>[\w.-]+): iberror: (?P<msg>.*)$")
_SOURCE_WARN = re.compile(r"^\s*\S+\.c:\d+; (?P<msg>.*)$")  # libibnetdisc/libibmad: `src/query_smp.c:199; ...`
_NO_MAD_PORT = ("can't open UMAD port", "can't open MAD port", "Failed to open", "client_register", "ib_umad")


def _diagnostics(lines: list[str], tool: str) -> tuple[list[str], str | None]:
    """The warnings infiniband-diags printed (`ibwarn:`, `file.c:N;`) and ``tool``'s `iberror:` reason, if any."""
    warnings: list[str] = []
    error = None
    for line in lines:
        if match := _IBWARN.match(line) or _SOURCE_WARN.match(line):
            warnings.append(match.group("msg").strip())
        elif (match := _IBERROR.match(line)) and match.group("tool") == tool:
            error = match.group("msg").strip()
    return warnings, error


def _only_failure(lines: list[str], tool: str) -> bool:
    """Nothing but warnings, ``tool``'s iberror, prompts and at most one closing message: the tool failed.

    Another tool's output that happens to carry an `ibwarn:` line (ibsim prints one for every client) is not a
    failure of this one and stays refused.
    """
    own_error = [m for line in lines if (m := _IBERROR.match(line)) and m.group("tool") == tool]
    other = [
        line
        for line in lines
        if line.strip() and not (_IBWARN.match(line) or _SOURCE_WARN.match(line)) and prompt_command(line) is None
    ]
    return len(other) <= len(own_error) + (0 if own_error else 1)


def _failure_kind(error: str | None, warnings: list[str]) -> FailureKind:
    text = " ".join([error or "", *warnings])
    if any(marker in text for marker in _NO_MAD_PORT):
        return "no_mad_port"
    if "query" in (error or ""):
        return "no_sm_response"
    if "discover failed" in (error or ""):
        return "discovery_failed"
    return "other"


def _last_message(lines: list[str]) -> str | None:
    """The last line that is not a warning or a shell prompt: iblinkinfo's `Failed to open (null) port 0`."""
    for line in reversed(lines):
        if line.strip() and not (_IBWARN.match(line) or _SOURCE_WARN.match(line)) and prompt_command(line) is None:
            return line.strip()
    return None


# --------------------------------------------------------------------------------------------------- sminfo

# infiniband-diags/sminfo.c: statestr[]
_SM_STATES = {0: "SMINFO_NOTACT", 1: "SMINFO_DISCOVER", 2: "SMINFO_STANDBY", 3: "SMINFO_MASTER"}
# printf("sminfo: sm lid %d sm guid 0x%" PRIx64 ", activity count %u priority %d state %d %s\n"); OFED 1.x printed
# the LID in hex and no state.
_SMINFO = re.compile(
    r"sminfo: sm lid (?P<lid>0x[0-9a-fA-F]{1,4}|\d{1,6}) sm guid (?P<guid>0x[0-9a-fA-F]{1,16}), "
    r"activity count (?P<count>\d{1,20}) priority (?P<prio>\d{1,3})(?: state (?P<state>\d{1,3}) (?P<name>\S+))?"
)


class SmInfo(Parsed):
    """The subnet manager `sminfo` reached through the local port, or why it reached none."""

    sm_lid: int | None = None
    sm_guid: str | None = None
    activity_count: int | None = None
    priority: int | None = None
    state: int | None = None
    state_name: str | None = None
    error: str | None = None
    failure: FailureKind | None = None
    warnings: list[str] = []

    @property
    def reachable(self) -> bool:
        """An SM answered the SMInfo query."""
        return self.sm_lid is not None

    @property
    def is_master(self) -> bool:
        """The SM that answered is the master (state 3), not a standby."""
        return self.state == 3


def parse_sminfo(text: str) -> SmInfo:
    """Parse `sminfo` (`sminfo: sm lid 1 sm guid 0x..., activity count N priority P state 3 SMINFO_MASTER`).

    A wrapped paste of the one long line is read too. `sminfo: iberror: failed: query` (no SM answered) and the
    MAD-port failures come back with `error` and `failure` set.
    """
    lines = require_lines(text, "sminfo")
    warnings, error = _diagnostics(lines, "sminfo")
    match = _SMINFO.search(" ".join(line.strip() for line in lines))
    if match:
        state = to_int(match.group("state"))
        return SmInfo(
            sm_lid=to_int(match.group("lid")),
            sm_guid=normalize_guid(match.group("guid")),
            activity_count=int(match.group("count")),
            priority=int(match.group("prio")),
            state=state,
            state_name=match.group("name") or (_SM_STATES.get(state) if state is not None else None),
            warnings=warnings,
        )
    if error is None or not _only_failure(lines, "sminfo"):
        raise ParseError("no 'sminfo: sm lid ...' line and no 'sminfo: iberror:' failure: not sminfo output")
    return SmInfo(error=error, failure=_failure_kind(error, warnings), warnings=warnings)


# ------------------------------------------------------------------------------------------------ the uplink


class IbUplink(Parsed):
    """Where one HCA port is cabled: the switch (or, back to back, the other CA), its port, and the link."""

    ca_name: str | None = None
    ca_port: int | None = None
    ca_port_guid: str | None = None
    ca_lid: int | None = None
    switch_guid: str | None = None
    switch_name: str | None = None
    switch_lid: int | None = None
    switch_port: int
    peer_type: NodeType | None = None
    state: str | None = None
    phys_state: str | None = None
    width: str | None = None
    speed_label: str | None = None
    speed_gbps_per_lane: float | None = None


def _describes(description: str | None, host: str | None, ca: str | None) -> bool:
    """A node description `HOST CA` (`gpu-01 mlx5_0`, `cu02 HCA-1`) names ``host``'s CA ``ca``."""
    words = (description or "").split()
    if not words or (host is None and ca is None):
        return False
    if host is not None and words[0].lower() != host.split(".")[0].lower():
        return False
    return ca is None or ca in words[1:]


# ----------------------------------------------------------------------------------------------- iblinkinfo

# print_node_header(): `Switch: 0x%016 NAME:` / `CA: NAME:`
_LINK_HEADER = re.compile(r"^(?P<type>Switch|CA|Router|\?\?): (?:(?P<guid>0x[0-9a-fA-F]{1,16}) )?(?P<name>.*):$")
# print_port(): [GUID ["NAME"]] LID PORT[EXT] ==(WIDTH SPEED STATE/PHYS)==>  REMOTE; --line adds the quoted name
_LINK_LINE = re.compile(
    r"""^\s*(?:(?P<guid>0x[0-9a-fA-F]{1,16})\s+(?:"(?P<name>[^"]*)"\s+)?)?
    (?P<lid>\d{1,6})\s+(?P<port>\d{1,4})\[[^\]]*\]\s*
    ==\(\s*(?:(?P<width>\d{1,2}X)\s+(?P<speed>\d{1,3}(?:\.\d{1,6})?)\s+Gbps(?:\s+\((?P<fdr10>FDR10)\))?\s+)?
    (?P<state>[^\s/]+)/\s*(?P<phys>[^\s)]+)\s*\)(?:\s*\([^)]*\))?==>\s*(?P<remote>.*)$""",
    re.VERBOSE,
)
_REMOTE = re.compile(
    r"""^(?:(?P<guid>0x[0-9a-fA-F]{1,16})\s+)?(?P<lid>\d{1,6})\s+(?P<port>\d{1,4})\[[^\]]*\]\s+
    "(?P<name>.*)"\s+\((?P<msg>.*)\)$""",
    re.VERBOSE,
)


class IbLink(Parsed):
    """One port line of `iblinkinfo`: the port, how its link trained, and what is at the other end.

    ``guid`` is what iblinkinfo printed for the port: a switch's GUID (all its ports share it), a CA port's port
    GUID. ``node_type`` is None where the output does not say (`--line` mode, a grep'd paste). ``could_be`` is
    iblinkinfo's note that both ends support a wider or faster link than the one that trained.
    """

    node_type: NodeType | None = None
    node_name: str | None = None
    guid: str | None = None
    lid: int
    port: int
    state: str
    phys_state: str
    width: str | None = None
    speed_gbps_per_lane: float | None = None
    speed_label: str | None = None
    peer_guid: str | None = None
    peer_lid: int | None = None
    peer_port: int | None = None
    peer_name: str | None = None
    could_be: str | None = None

    @property
    def lanes(self) -> int | None:
        """1, 2, 4, 8 or 12 lanes trained (None on a Down port)."""
        return _lanes(self.width)

    @property
    def rate_gbps(self) -> float | None:
        """The link's data rate (4X HDR -> 200.0), comparable with ibstat's `Rate:`."""
        return link_rate_gbps(self.width, self.speed_label)

    @property
    def degraded(self) -> bool:
        """The link is up at less width or speed than both ends could do."""
        return self.state != "Down" and bool(self.could_be)


class IbLinkInfo(Parsed):
    """Every port `iblinkinfo` listed, or why it could not scan the fabric."""

    links: list[IbLink]
    error: str | None = None
    failure: FailureKind | None = None
    warnings: list[str] = []

    def down_ports(self) -> list[IbLink]:
        """Ports with no link (logical state Down: cable out, peer off, or Polling for one)."""
        return [link for link in self.links if link.state == "Down"]

    def degraded_links(self) -> list[IbLink]:
        """Links that trained narrower or slower than their ends support (a 1X link, EDR on an HDR port)."""
        return [link for link in self.links if link.degraded]

    def find_ca_uplink(
        self, host: str | None = None, ca: str | None = None, port_guid: str | None = None, ca_port: int | None = None
    ) -> IbUplink | None:
        """The switch port that ``host``'s CA ``ca`` (or the CA port with ``port_guid``) is cabled to.

        The CA's own line is used when listed; otherwise (a `--switches-only` or grep'd paste) the switch line whose
        peer is that CA. Node descriptions are `HOST CA`; old stacks name the CA `HCA-N` rather than `mlx5_N`, so the
        port GUID (sysfs, ibstat) is the surer key.
        """
        want = normalize_guid(port_guid) if port_guid else None

        def ca_side(link: IbLink) -> bool:
            if link.node_type == "Switch" or link.peer_port is None or (ca_port and link.port != ca_port):
                return False
            return link.guid == want if want else _describes(link.node_name, host, ca)

        if (mine := next((link for link in self.links if ca_side(link)), None)) is not None:
            switch = next(
                (
                    link
                    for link in self.links
                    if link.lid == mine.peer_lid and link.port == mine.peer_port and link.peer_port == mine.port
                ),
                None,
            )
            return IbUplink(
                ca_name=mine.node_name,
                ca_port=mine.port,
                ca_port_guid=mine.guid,
                ca_lid=mine.lid,
                switch_guid=mine.peer_guid or (switch.guid if switch else None),
                switch_name=mine.peer_name,
                switch_lid=mine.peer_lid,
                switch_port=mine.peer_port,
                peer_type=switch.node_type if switch else None,
                **_link_fields(mine),
            )
        for link in self.links:
            if link.node_type == "CA" or link.peer_port is None or (ca_port and link.peer_port != ca_port):
                continue
            if (link.peer_guid == want) if want else _describes(link.peer_name, host, ca):
                return IbUplink(
                    ca_name=link.peer_name,
                    ca_port=link.peer_port,
                    ca_port_guid=link.peer_guid,
                    ca_lid=link.peer_lid,
                    switch_guid=link.guid,
                    switch_name=link.node_name or self._name_of_lid(link.lid),
                    switch_lid=link.lid,
                    switch_port=link.port,
                    peer_type=link.node_type,
                    **_link_fields(link),
                )
        return None

    def _name_of_lid(self, lid: int) -> str | None:
        """The node description other lines give LID ``lid`` (a grep'd paste lost the switch's own header)."""
        return next((link.peer_name for link in self.links if link.peer_lid == lid and link.peer_name), None)


def _link_fields(link: IbLink) -> dict[str, str | float | None]:
    return {
        "state": link.state,
        "phys_state": link.phys_state,
        "width": link.width,
        "speed_label": link.speed_label,
        "speed_gbps_per_lane": link.speed_gbps_per_lane,
    }


def _iblink(match: re.Match[str], header: tuple[NodeType | None, str | None, str | None] | None) -> IbLink:
    guid = normalize_guid(match.group("guid")) if match.group("guid") else None
    if match.group("name") is not None:  # --line: the node is named on every line, its type is not printed
        node_type, name = None, match.group("name").strip()
    elif header is not None:
        node_type, name, header_guid = header
        guid = guid or header_guid
    else:  # a grep'd paste without headers: only CA ports print their GUID
        node_type, name = ("CA" if guid else "Switch"), None
    speed = float(match.group("speed")) if match.group("speed") else None
    label = "FDR10" if match.group("fdr10") else _LANE_LABEL.get(speed) if speed is not None else None
    remote = _REMOTE.match(match.group("remote"))
    return IbLink(
        node_type=node_type,
        node_name=name,
        guid=guid,
        lid=int(match.group("lid")),
        port=int(match.group("port")),
        state=match.group("state"),
        phys_state=match.group("phys"),
        width=match.group("width"),
        speed_gbps_per_lane=speed,
        speed_label=label,
        peer_guid=normalize_guid(remote.group("guid")) if remote and remote.group("guid") else None,
        peer_lid=int(remote.group("lid")) if remote else None,
        peer_port=int(remote.group("port")) if remote else None,
        peer_name=remote.group("name") if remote else None,
        could_be=(remote.group("msg").strip() or None) if remote else None,
    )


def _line_mode_switches(links: list[IbLink]) -> None:
    """In `--line` output a GUID listed with several port numbers is a switch's: CA ports each have their own."""
    ports: dict[str, set[int]] = {}
    for link in links:
        if link.node_type is None and link.guid:
            ports.setdefault(link.guid, set()).add(link.port)
    for link in links:
        if link.node_type is None and link.guid and len(ports[link.guid]) > 1:
            link.node_type = "Switch"


def parse_iblinkinfo(text: str) -> IbLinkInfo:
    """Parse `iblinkinfo` in its default (per-node header), `--line`/`-l` and grep'd forms."""
    lines = require_lines(text, "iblinkinfo")
    warnings, error = _diagnostics(lines, "iblinkinfo")
    links: list[IbLink] = []
    header: tuple[NodeType | None, str | None, str | None] | None = None
    for line in lines:
        if match := _LINK_HEADER.match(line.strip()):
            kind = match.group("type")
            node_type: NodeType | None = "Switch" if kind == "Switch" else "CA" if kind == "CA" else None
            node_type = "Router" if kind == "Router" else node_type
            guid = normalize_guid(match.group("guid")) if match.group("guid") else None
            header = (node_type, match.group("name").strip(), guid)
        elif match := _LINK_LINE.match(line):
            links.append(_iblink(match, header))
    _line_mode_switches(links)
    if links:
        return IbLinkInfo(links=links, warnings=warnings)
    if (error is None and not warnings) or not _only_failure(lines, "iblinkinfo"):
        raise ParseError("no 'LID PORT[ ] ==( ... )==>' port line: not iblinkinfo output")
    error = error or _last_message(lines) or warnings[-1]
    return IbLinkInfo(links=[], error=error, failure=_failure_kind(error, warnings), warnings=warnings)


# -------------------------------------------------------------------------------------------- ibnetdiscover

_TYPES: dict[str, NodeType] = {"Switch": "Switch", "Ca": "CA", "Rt": "Router", "S": "Switch", "H": "CA", "R": "Router"}
# out_switch_detail()/out_ca_detail(): TYPE\tPORTS "X-GUID"\t\t# "DESC" [enhanced|base port 0 lid N lmc M]
_ND_NODE = re.compile(
    r'^\s*(?P<type>Switch|Ca|Rt)\s+(?P<ports>\d{1,3})\s+"(?P<id>[SHR]-[^"]*)"\s*#\s*"(?P<name>.*?)"(?P<tail>[^"]*)$'
)
_ND_PORT0 = re.compile(r"(?P<kind>enhanced|base) port 0 lid (?P<lid>\d{1,6})")
# out_switch_port()/out_ca_port(): [PORT](PORTGUID) "X-GUID"[PORT](PORTGUID) # [lid N lmc M] "DESC" lid N WxSPEED
_ND_LINK = re.compile(
    r"""^\s*\[(?P<port>\d{1,4})\](?:\[ext\ \d+\])?(?:\((?P<pguid>[^)]*)\))?\s*
    "(?P<rid>[SHR]-[^"]*)"\[(?P<rport>\d{1,4})\](?:\[ext\ \d+\])?(?:\s*\((?P<rpguid>[^)]*)\))?\s*
    \#\s*(?P<comment>.*)$""",
    re.VERBOSE,
)
_ND_COMMENT = re.compile(
    r'^(?:lid (?P<lid>\d{1,6}) lmc \d{1,2}\s+)?"(?P<name>.*)"\s+lid (?P<rlid>\d{1,6})'
    r"(?:\s+(?P<width>\d{1,2})x(?P<speed>[A-Z0-9?]+))?"
)


class IbNode(Parsed):
    """A switch, CA or router `ibnetdiscover` found; ``lid`` is a switch's port-0 LID or a CA's first port's."""

    node_type: NodeType
    guid: str
    name: str
    ports: int
    lid: int | None = None
    enhanced_port0: bool | None = None
    port_guids: dict[int, str] = {}
    port_lids: dict[int, int] = {}


class IbFabricLink(Parsed):
    """One connectivity line: a port of ``from_guid``'s node and the node and port at the cable's other end.

    ibnetdiscover lists every cable from both of its ends; ``width`` (`4x`) and ``speed_label`` (`HDR`) are the
    active ones.
    """

    from_guid: str
    from_port: int
    from_port_guid: str | None = None
    to_type: NodeType
    to_guid: str
    to_port: int
    to_port_guid: str | None = None
    to_name: str | None = None
    to_lid: int | None = None
    width: str | None = None
    speed_label: str | None = None

    @property
    def lanes(self) -> int | None:
        """Lanes the link trained with (4 for `4xEDR`)."""
        return _lanes(self.width)

    @property
    def rate_gbps(self) -> float | None:
        """The link's data rate (4xEDR -> 100.0)."""
        return link_rate_gbps(self.width, self.speed_label)


class IbFabric(Parsed):
    """The topology `ibnetdiscover` printed, or why it could not discover one."""

    nodes: list[IbNode]
    links: list[IbFabricLink]
    error: str | None = None
    failure: FailureKind | None = None
    warnings: list[str] = []

    def node(self, guid: str) -> IbNode | None:
        """The node with node GUID ``guid`` (any spelling)."""
        want = normalize_guid(guid)
        return next((node for node in self.nodes if node.guid == want), None)

    def switches(self) -> list[IbNode]:
        """Every switch listed."""
        return [node for node in self.nodes if node.node_type == "Switch"]

    def find_ca_uplink(
        self, host: str | None = None, ca: str | None = None, port_guid: str | None = None, ca_port: int | None = None
    ) -> IbUplink | None:
        """The switch port that ``host``'s CA ``ca`` (or the CA port with ``port_guid``) is cabled to.

        From the CA's own block when listed, else from the switch line whose peer is that CA.
        """
        want = normalize_guid(port_guid) if port_guid else None
        names = {node.guid: node for node in self.nodes}
        for link in self.links:
            mine = names.get(link.from_guid)
            if mine is None or mine.node_type == "Switch" or (ca_port and link.from_port != ca_port):
                continue
            if link.from_port_guid == want if want else _describes(mine.name, host, ca):
                peer = names.get(link.to_guid)
                return IbUplink(
                    ca_name=mine.name,
                    ca_port=link.from_port,
                    ca_port_guid=link.from_port_guid,
                    ca_lid=mine.port_lids.get(link.from_port),
                    switch_guid=link.to_guid,
                    switch_name=link.to_name,
                    switch_lid=link.to_lid if link.to_lid is not None else peer.lid if peer else None,
                    switch_port=link.to_port,
                    peer_type=link.to_type,
                    width=link.width,
                    speed_label=link.speed_label,
                    speed_gbps_per_lane=_LANE_GBPS.get(link.speed_label or ""),
                )
        for link in self.links:
            switch = names.get(link.from_guid)
            if switch is None or link.to_type == "Switch" or (ca_port and link.to_port != ca_port):
                continue
            if link.to_port_guid == want if want else _describes(link.to_name, host, ca):
                return IbUplink(
                    ca_name=link.to_name,
                    ca_port=link.to_port,
                    ca_port_guid=link.to_port_guid,
                    ca_lid=link.to_lid,
                    switch_guid=switch.guid,
                    switch_name=switch.name,
                    switch_lid=switch.lid,
                    switch_port=link.from_port,
                    peer_type=switch.node_type,
                    width=link.width,
                    speed_label=link.speed_label,
                    speed_gbps_per_lane=_LANE_GBPS.get(link.speed_label or ""),
                )
        return None


def _fabric_link(node: IbNode, match: re.Match[str]) -> IbFabricLink:
    comment = _ND_COMMENT.match(match.group("comment"))
    port = int(match.group("port"))
    port_guid = normalize_guid(match.group("pguid")) if match.group("pguid") else None
    if port_guid:
        node.port_guids[port] = port_guid
    if comment and comment.group("lid"):  # a CA's own LID on this port
        node.port_lids[port] = int(comment.group("lid"))
        node.lid = node.lid if node.lid is not None else node.port_lids[port]
    width = comment.group("width") if comment else None
    return IbFabricLink(
        from_guid=node.guid,
        from_port=port,
        from_port_guid=port_guid,
        to_type=_TYPES[match.group("rid")[0]],
        to_guid=normalize_guid(match.group("rid")),
        to_port=int(match.group("rport")),
        to_port_guid=normalize_guid(match.group("rpguid")) if match.group("rpguid") else None,
        to_name=comment.group("name") if comment else None,
        to_lid=int(comment.group("rlid")) if comment else None,
        width=f"{width}x" if width else None,
        speed_label=comment.group("speed") if comment and comment.group("speed") else None,
    )


def parse_ibnetdiscover(text: str) -> IbFabric:
    """Parse the default `ibnetdiscover` topology: `Switch`/`Ca`/`Rt` blocks and their `[port] "peer"[port]` lines."""
    lines = require_lines(text, "ibnetdiscover")
    warnings, error = _diagnostics(lines, "ibnetdiscover")
    nodes: list[IbNode] = []
    links: list[IbFabricLink] = []
    current: IbNode | None = None
    for line in lines:
        if match := _ND_NODE.match(line):
            port0 = _ND_PORT0.search(match.group("tail"))
            current = IbNode(
                node_type=_TYPES[match.group("type")],
                guid=normalize_guid(match.group("id")),
                name=match.group("name"),
                ports=int(match.group("ports")),
                lid=int(port0.group("lid")) if port0 else None,
                enhanced_port0=port0.group("kind") == "enhanced" if port0 else None,
            )
            nodes.append(current)
        elif current is not None and (match := _ND_LINK.match(line)):
            links.append(_fabric_link(current, match))
    if nodes:
        return IbFabric(nodes=nodes, links=links, warnings=warnings)
    if (error is None and not warnings) or not _only_failure(lines, "ibnetdiscover"):
        raise ParseError("no 'Switch'/'Ca' node line: not ibnetdiscover output")
    error = error or _last_message(lines) or warnings[-1]
    return IbFabric(nodes=[], links=[], error=error, failure=_failure_kind(error, warnings), warnings=warnings)


# --------------------------------------------------------------------------------------------------- sysfs

# drivers/infiniband/core/sysfs.c: state_show "%d: %s", phys_state_show "%u: %s", rate_show "%d%s Gb/sec (%dX%s)",
# lid_show/sm_lid_show "0x%x", sm_sl_show "%u", link_layer_show "%s", show_port_pkey "0x%04x".
_SYSFS_ATTR = re.compile(
    r"^\s*(?:/sys/class/infiniband/)?(?P<dev>[^/\s:]+)/ports/(?P<port>\d{1,3})/"
    r"(?P<attr>state|phys_state|rate|lid|sm_lid|sm_sl|link_layer):(?P<value>.*)$"
)
_CODED = re.compile(r"^(?P<code>\d{1,3}):\s*(?P<name>.+)$")
_RATE = re.compile(r"^(?P<gbps>\d{1,5}(?:\.5)?) Gb/sec \((?P<lanes>\d{1,2})X\s*(?P<label>[A-Z0-9]*)\)$")


class IbPortSysfs(Parsed):
    """One RDMA port as the kernel reports it: states, trained rate, LIDs and link layer."""

    device: str
    port: int
    state: int | None = None
    state_name: str | None = None
    phys_state: int | None = None
    phys_state_name: str | None = None
    rate_gbps: float | None = None
    width: str | None = None
    speed_label: str | None = None
    lid: int | None = None
    sm_lid: int | None = None
    sm_sl: int | None = None
    link_layer: str | None = None

    @property
    def lanes(self) -> int | None:
        """Lanes the link trained with (4 for `(4X EDR)`)."""
        return _lanes(self.width)

    @property
    def active(self) -> bool:
        """Logical state ACTIVE (4): the SM configured the port (always so on RoCE once the netdev is up)."""
        return self.state == 4

    @property
    def lid_assigned(self) -> bool:
        """The SM gave the port a LID (0 and 0xffff mean none: no SM yet, or RoCE, which has no LIDs)."""
        return self.lid not in (None, 0, 0xFFFF)


class SysfsIbPorts(Parsed):
    """Every (device, port) the sysfs read listed, in the order first seen."""

    ports: list[IbPortSysfs]

    def get(self, device: str, port: int = 1) -> IbPortSysfs | None:
        """The port ``port`` of ``device``, if listed."""
        return next((p for p in self.ports if p.device == device and p.port == port), None)


def _set_sysfs(entry: IbPortSysfs, attr: str, value: str) -> None:
    if attr in ("state", "phys_state"):
        if coded := _CODED.match(value):
            setattr(entry, attr, int(coded.group("code")))
            setattr(entry, f"{attr}_name", coded.group("name").strip())
    elif attr == "rate":
        if rate := _RATE.match(value):
            entry.rate_gbps = float(rate.group("gbps"))
            entry.width = f"{rate.group('lanes')}X"
            entry.speed_label = rate.group("label") or None
    elif attr == "link_layer":
        entry.link_layer = value or None
    else:  # lid and sm_lid are hex, sm_sl decimal
        setattr(entry, attr, to_int(value))


def parse_sysfs_ib_ports(text: str) -> SysfsIbPorts:
    """Parse `grep -sH . /sys/class/infiniband/*/ports/*/{state,phys_state,rate,lid,sm_lid,sm_sl,link_layer}`."""
    entries: dict[tuple[str, int], IbPortSysfs] = {}
    for line in require_lines(text, "sysfs port"):
        if match := _SYSFS_ATTR.match(line):
            key = (match.group("dev"), int(match.group("port")))
            entry = entries.setdefault(key, IbPortSysfs(device=key[0], port=key[1]))
            _set_sysfs(entry, match.group("attr"), match.group("value").strip())
    if not entries:
        raise ParseError("no '/sys/class/infiniband/DEV/ports/N/ATTR:value' line: not a sysfs port read")
    return SysfsIbPorts(ports=list(entries.values()))


_SYSFS_PKEY = re.compile(
    r"^\s*(?:/sys/class/infiniband/)?(?P<dev>[^/\s:]+)/ports/(?P<port>\d{1,3})/pkeys/(?P<index>\d{1,5}):"
    r"(?P<value>0x[0-9a-fA-F]{1,4})$"
)


class Pkey(Parsed):
    """A partition key slot: the 15-bit partition and the membership bit (0x8000 full, clear limited)."""

    index: int
    value: int
    full_member: bool

    @property
    def hex(self) -> str:
        """The key as sysfs prints it (`0xffff`)."""
        return f"0x{self.value:04x}"

    @property
    def partition(self) -> int:
        """The partition number without the membership bit (0xffff and 0x7fff are both 0x7fff)."""
        return self.value & 0x7FFF


class PortPkeys(Parsed):
    """The non-empty slots of one port's P_Key table, by index."""

    device: str
    port: int
    pkeys: list[Pkey]

    def member_of(self, pkey: int) -> Pkey | None:
        """The slot holding partition ``pkey`` (membership bit ignored), if the port is a member at all."""
        return next((key for key in self.pkeys if key.partition == pkey & 0x7FFF), None)


class SysfsPkeys(Parsed):
    """The P_Key tables of every port the sysfs read listed."""

    ports: list[PortPkeys]

    def get(self, device: str, port: int = 1) -> PortPkeys | None:
        """The table of port ``port`` of ``device``, if listed."""
        return next((p for p in self.ports if p.device == device and p.port == port), None)


def parse_sysfs_pkeys(text: str) -> SysfsPkeys:
    """Parse `grep -sH . /sys/class/infiniband/*/ports/*/pkeys/*`; empty (0x0000) slots are dropped."""
    tables: dict[tuple[str, int], list[Pkey]] = {}
    for line in require_lines(text, "sysfs pkeys"):
        if match := _SYSFS_PKEY.match(line):
            keys = tables.setdefault((match.group("dev"), int(match.group("port"))), [])
            value = int(match.group("value"), 16)
            if value & 0x7FFF:
                keys.append(Pkey(index=int(match.group("index")), value=value, full_member=bool(value & 0x8000)))
    if not tables:
        raise ParseError("no '/sys/class/infiniband/DEV/ports/N/pkeys/I:0x....' line: not a sysfs P_Key read")
    ports = [
        PortPkeys(device=dev, port=port, pkeys=sorted(keys, key=lambda key: key.index))
        for (dev, port), keys in tables.items()
    ]
    return SysfsPkeys(ports=ports)
