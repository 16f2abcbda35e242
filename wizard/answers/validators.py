"""Validated value types for the answers file: host names, interface names, addresses, subnets."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated

from pydantic import AfterValidator, Field

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME_RE = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*$")
# Linux IFNAMSIZ is 16 including the NUL; '/' and whitespace are forbidden, ':' marks legacy aliases.
_IFNAME_RE = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,15}$")
_MODEL_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def _hostname(value: str) -> str:
    if not _HOSTNAME_RE.match(value):
        raise ValueError(f"{value!r} is not a valid host name (letters, digits, '-', dots between labels)")
    return value


def _ifname(value: str) -> str:
    if not _IFNAME_RE.match(value):
        raise ValueError(f"{value!r} is not a valid interface name (1-15 of letters, digits, '_', '.', '-')")
    return value


def _address(value: str) -> str:
    """An IP literal or a resolvable-looking host name; never a URL or a value with spaces."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if re.fullmatch(r"[0-9.]+", value):
        raise ValueError(f"{value!r} is not a valid IPv4 address")
    return _hostname(value)


def _subnet(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a subnet in CIDR form with host bits zero ({exc})") from None
    if net.version == 4 and net.prefixlen > 30:
        raise ValueError(f"{value!r} is too small for host addresses (use /30 or larger)")
    return str(net)


def _model_id(value: str) -> str:
    if not _MODEL_ID_RE.match(value):
        raise ValueError(f"{value!r} is not a model id of the form 'organisation/model'")
    return value


Hostname = Annotated[str, AfterValidator(_hostname)]
InterfaceName = Annotated[str, AfterValidator(_ifname)]
HostAddress = Annotated[str, AfterValidator(_address)]
Subnet = Annotated[str, AfterValidator(_subnet)]
ModelId = Annotated[str, AfterValidator(_model_id)]
TcpPort = Annotated[int, Field(ge=1, le=65535)]
