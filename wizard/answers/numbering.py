"""Rail host numbers: each host's id in the rail subnets, gateways skipped, and subnets large enough for them."""

from __future__ import annotations

import ipaddress
from typing import Any

from wizard.answers import ranges as host_ranges
from wizard.answers.ranges import KeyProblem


class HostPaths:
    """Key path of a host's key in the file: an expanded host points back at its range entry."""

    def __init__(self, entries: list[Any] | None = None, sources: list[int] | None = None) -> None:
        self.entries, self.sources = entries, sources

    def __call__(self, index: int, key: str) -> tuple[str | int, ...]:
        if self.entries is None or self.sources is None:
            return ("hosts", index, key)
        src = self.sources[index]
        entry = self.entries[src]
        if host_ranges.is_range_entry(entry):
            key = {"host_id": "host_id_start", "address": "address" if "address" in entry else "address_start"}.get(
                key, key
            )
        return ("hosts", src, key)


def gateway_ids(rails: list[Any]) -> dict[int, int]:
    """Host part of each rail gateway -> the first rail whose gateway it is."""
    ids: dict[int, int] = {}
    for index, rail in enumerate(rails):
        if rail.gateway:
            net = ipaddress.ip_network(rail.subnet)
            ids.setdefault(int(ipaddress.ip_address(rail.gateway)) - int(net.network_address), index)
    return ids


def number_hosts(hosts: list[Any], reserved: dict[int, int]) -> dict[str, int]:
    """host_id where given; otherwise 1, 2, ... in list order, skipping every rail gateway's host part."""
    ids: dict[str, int] = {}
    next_id = 0
    for host in hosts:
        if host.host_id is not None:
            ids[host.name] = host.host_id
            continue
        next_id += 1
        while next_id in reserved:
            next_id += 1
        ids[host.name] = next_id
    return ids


def no_gateway_ids(hosts: list[Any], rails: list[Any], at: HostPaths) -> None:
    reserved = gateway_ids(rails)
    for index, host in enumerate(hosts):
        if host.host_id is not None and host.host_id in reserved:
            rail = reserved[host.host_id]
            raise KeyProblem(
                at(index, "host_id"),
                f"{host.host_id} gives {host.name} the address {rails[rail].gateway} of network.rails[{rail}].gateway; "
                "choose another host_id",
            )


def hosts_fit(
    hosts: list[Any], ids: dict[str, int], rails: list[Any], subnets: list[tuple[str, int, str]], at: HostPaths
) -> None:
    """Every host id fits every rail and bond subnet, or the refusal says how many hosts the subnet holds."""
    if not ids:
        return
    highest_name = max(ids, key=lambda n: ids[n])
    highest = ids[highest_name]
    reserved = gateway_ids(rails)
    for where, index, subnet in subnets:
        net = ipaddress.ip_network(subnet)
        last = net.num_addresses - 2  # host ids 1..last; 0 is the subnet address, last + 1 the broadcast
        if highest <= last:
            continue
        position = next(i for i, h in enumerate(hosts) if h.name == highest_name)
        if hosts[position].host_id is not None:
            raise KeyProblem(
                at(position, "host_id"),
                f"host id {highest} of {highest_name} does not fit {where}[{index}].subnet {net}: its host ids run "
                f"1-{last} ({net.network_address + 1} to {net.network_address + last})",
            )
        gateway = rails[index].gateway if where == "network.rails" else None
        own = {reserved_id for reserved_id in reserved if reserved_id <= last}
        message = f"{net} holds {last - len(own)} hosts"
        if gateway:
            own.discard(int(ipaddress.ip_address(gateway)) - int(net.network_address))
            message += f" besides its gateway {gateway}"
        if own:
            which = "id " if len(own) == 1 else "ids "
            message += f" and host {which}{', '.join(map(str, sorted(own)))} (skipped: other rails' gateways)"
        raise KeyProblem(
            (*_split(where), index, "subnet"), f"{message}, the answers name {len(hosts)} (use a larger subnet)"
        )


def management_outside_rails(hosts: list[Any], subnets: list[tuple[str, int, str]], at: HostPaths) -> None:
    nets = [(where, index, subnet, ipaddress.ip_network(subnet)) for where, index, subnet in subnets]
    for host_index, host in enumerate(hosts):
        try:
            address = ipaddress.ip_address(host.address)
        except ValueError:
            continue
        for where, index, subnet, net in nets:
            if address in net:
                raise KeyProblem(
                    at(host_index, "address"),
                    f"management address {address} of {host.name} lies inside {where}[{index}].subnet "
                    f"{subnet}; rail subnets must not overlap the management network",
                )


def _split(dotted: str) -> tuple[str, ...]:
    return tuple(dotted.split("."))
