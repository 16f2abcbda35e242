"""ethtool: link settings, driver info (-i), statistics (-S) and pause parameters (-a), as mlx5/i40e print them."""

from __future__ import annotations

from wizard.lab.commands import command
from wizard.lab.netdevs import Netdev
from wizard.lab.streams import CommandFailed, Ctx

INTEL_MODES = ("10000baseSR/Full",)


def _modes(label: str, modes: tuple[str, ...]) -> list[str]:
    # ethtool pads "Supported link modes:" / "Advertised link modes:" to one column (24 chars after the tab)
    head = f"{label}:".ljust(24)
    return [f"\t{head}{modes[0]}"] + [f"\t{' ' * 24}{m}" for m in modes[1:]]


def settings(ctx: Ctx, dev: Netdev) -> str:
    host = ctx.host
    up = host.netdev_carrier(dev.name)
    if dev.kind == "loopback":
        return f"Settings for {dev.name}:\n\tLink detected: yes\n"
    lines = [f"Settings for {dev.name}:"]
    if dev.kind == "bond":
        lines += [
            "\tSupported ports: [  ]",
            "\tSupported link modes:   Not reported",
            "\tSupported pause frame use: No",
            "\tSupports auto-negotiation: No",
            "\tSupported FEC modes: Not reported",
            "\tAdvertised link modes:  Not reported",
            "\tAdvertised pause frame use: No",
            "\tAdvertised auto-negotiation: No",
            "\tAdvertised FEC modes: Not reported",
        ]
        speed = host.netdev_speed(dev.name)
        lines += [
            f"\tSpeed: {speed}Mb/s" if up else "\tSpeed: Unknown!",
            "\tDuplex: Full" if up else "\tDuplex: Unknown! (255)",
            "\tAuto-negotiation: off",
            "\tPort: Other",
            "\tPHYAD: 0",
            "\tTransceiver: internal",
            f"\tLink detected: {'yes' if up else 'no'}",
        ]
        return "\n".join(lines) + "\n"
    if dev.port_index is not None:
        from wizard.lab.degraded import speed_mbps

        model = host.profile.card_of(dev.port_index).model
        modes, ports, port, fec = model.link_modes, "[ Backplane ]", "Direct Attach Copper", model.fec_modes
        speed, lanes = speed_mbps(host, dev.port_index), model.lanes  # the rate it trained at (fault degraded)
    else:
        modes, ports, port, fec = INTEL_MODES, "[ FIBRE ]", "FIBRE", "Not reported"
        speed, lanes = host.profile.mgmt.speed_mbps, 0
    lines += [f"\tSupported ports: {ports}"] + _modes("Supported link modes", modes)
    lines += [
        "\tSupported pause frame use: Symmetric",
        "\tSupports auto-negotiation: Yes",
        f"\tSupported FEC modes: {fec}",
    ] + _modes("Advertised link modes", modes)
    lines += [
        "\tAdvertised pause frame use: Symmetric",
        "\tAdvertised auto-negotiation: Yes",
        f"\tAdvertised FEC modes: {'None' if up and dev.port_index is not None else 'Not reported'}",
    ]
    if up:
        lines.append(f"\tSpeed: {speed}Mb/s")
        if lanes:
            lines.append(f"\tLanes: {lanes}")
        lines.append("\tDuplex: Full")
    else:
        lines += ["\tSpeed: Unknown!", "\tDuplex: Unknown! (255)"]
    lines += ["\tAuto-negotiation: on", f"\tPort: {port}", "\tPHYAD: 0", "\tTransceiver: internal"]
    if ctx.root:
        lines += ["\tSupports Wake-on: d", "\tWake-on: d"]
    else:
        lines.append("Cannot get wake-on-lan settings: Operation not permitted")
    lines.append(f"\tLink detected: {'yes' if up else 'no'}")
    return "\n".join(lines) + "\n"


def driver_info(ctx: Ctx, dev: Netdev) -> str:
    host = ctx.host
    if dev.kind == "bond":
        drv, ver, fw, bus, flags = "bonding", host.profile.kernel, "2", "", ("no", "no", "no", "no", "no")
    elif dev.kind == "loopback":
        return ""
    elif dev.port_index is not None:
        card = host.profile.card_of(dev.port_index)
        ver = host.doca_driver_version if host.stack == "doca" else host.profile.kernel
        drv, fw, bus = "mlx5_core", f"{host.firmware(card)} ({card.model.board_id})", dev.pci or ""
        flags = ("yes", "yes", "no", "no", "yes")
    else:
        m = host.profile.mgmt
        drv, ver, fw, bus, flags = m.driver, host.profile.kernel, m.firmware, m.pci, ("yes", "yes", "yes", "yes", "yes")
    return (
        f"driver: {drv}\nversion: {ver}\nfirmware-version: {fw}\nexpansion-rom-version: \nbus-info: {bus}\n"
        f"supports-statistics: {flags[0]}\nsupports-test: {flags[1]}\nsupports-eeprom-access: {flags[2]}\n"
        f"supports-register-dump: {flags[3]}\nsupports-priv-flags: {flags[4]}\n"
    )


def statistics(ctx: Ctx, dev: Netdev) -> str:
    host = ctx.host
    s = host.netdev_stats(dev.name)
    rx_p, tx_p = s["rx_packets"] + 1204, s["tx_packets"] + 1187
    rx_b, tx_b = s["rx_bytes"] + rx_p * 98, s["tx_bytes"] + tx_p * 96
    stats: list[tuple[str, int]] = [("rx_packets", rx_p), ("rx_bytes", rx_b), ("tx_packets", tx_p), ("tx_bytes", tx_b)]
    if dev.port_index is None:
        stats += [("rx_errors", 0), ("tx_errors", 0), ("rx_dropped", 0), ("tx_dropped", 0)]
        return "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in stats)
    from wizard.lab.flap import phy_errors

    phy = phy_errors(host, dev.port_index)
    stats += [
        ("tx_tso_packets", 0),
        ("tx_tso_bytes", 0),
        ("rx_lro_packets", 0),
        ("rx_lro_bytes", 0),
        ("rx_csum_unnecessary", rx_p),
        ("rx_csum_none", 0),
        ("rx_csum_complete", 0),
        ("tx_csum_partial", 0),
        ("tx_queue_stopped", 0),
        ("tx_queue_dropped", 0),
        ("tx_xmit_more", 0),
        ("rx_out_of_buffer", 0),
        ("rx_if_down_packets", 0),
        ("rx_steer_missed_packets", 0),
        ("rx_vport_unicast_packets", rx_p),
        ("rx_vport_unicast_bytes", rx_b),
        ("tx_vport_unicast_packets", tx_p),
        ("tx_vport_unicast_bytes", tx_b),
        ("rx_vport_rdma_unicast_packets", 0),
        ("rx_vport_rdma_unicast_bytes", 0),
        ("tx_vport_rdma_unicast_packets", 0),
        ("tx_vport_rdma_unicast_bytes", 0),
        ("tx_packets_phy", tx_p),
        ("rx_packets_phy", rx_p),
        ("rx_crc_errors_phy", phy["rx_crc_errors_phy"]),
        ("tx_bytes_phy", tx_b),
        ("rx_bytes_phy", rx_b),
        ("tx_mac_control_phy", 0),
        ("rx_mac_control_phy", 0),
        ("rx_in_range_len_errors_phy", 0),
        ("rx_out_of_range_len_phy", 0),
        ("rx_symbol_err_phy", phy["rx_symbol_err_phy"]),
        ("tx_pause_ctrl_phy", 0),
        ("rx_pause_ctrl_phy", 0),
        ("rx_discards_phy", 0),
        ("tx_discards_phy", 0),
        ("tx_errors_phy", 0),
        ("rx_undersize_pkts_phy", 0),
        ("rx_fragments_phy", 0),
        ("rx_jabbers_phy", 0),
        ("rx_buffer_passed_thres_phy", 0),
        ("link_down_events_phy", phy["link_down_events_phy"]),
    ]
    for p in range(8):
        share = 1 if p == 0 else 0
        stats += [
            (f"rx_prio{p}_bytes", rx_b * share),
            (f"rx_prio{p}_packets", rx_p * share),
            (f"rx_prio{p}_discards", 0),
            (f"tx_prio{p}_bytes", tx_b * share),
            (f"tx_prio{p}_packets", tx_p * share),
        ]
    qos = dev.qos
    pfc = qos.pfc if qos is not None else [0] * 8
    if any(pfc):
        # mlx5e lists per-priority pause counters only for priorities with PFC enabled
        for p in range(8):
            if pfc[p]:
                stats += [
                    (f"rx_prio{p}_pause", 0),
                    (f"rx_prio{p}_pause_duration", 0),
                    (f"tx_prio{p}_pause", 0),
                    (f"tx_prio{p}_pause_duration", 0),
                    (f"rx_prio{p}_pause_transition", 0),
                ]
    else:
        stats += [
            ("rx_global_pause", 0),
            ("rx_global_pause_duration", 0),
            ("tx_global_pause", 0),
            ("tx_global_pause_duration", 0),
            ("rx_global_pause_transition", 0),
        ]
    stats += [
        ("rx_pci_signal_integrity", 0),
        ("tx_pci_signal_integrity", 0),
        ("outbound_pci_stalled_rd", 0),
        ("outbound_pci_stalled_wr", 0),
        ("ch0_events", 0),
        ("ch0_poll", 0),
        ("rx0_packets", rx_p),
        ("rx0_bytes", rx_b),
        ("tx0_packets", tx_p),
        ("tx0_bytes", tx_b),
    ]
    return "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in stats)


def pause(ctx: Ctx, dev: Netdev) -> str:
    pfc = dev.qos.pfc if dev.qos is not None else [0] * 8
    onoff = "off" if any(pfc) else "on"
    return f"Pause parameters for {dev.name}:\nAutonegotiate:\ton\nRX:\t\t{onoff}\nTX:\t\t{onoff}\n\n"


@command("ethtool")
async def ethtool(ctx: Ctx) -> int:
    args = list(ctx.args)
    mode = "settings"
    while args and args[0].startswith("-"):
        a = args.pop(0)
        mode = {
            "-i": "info",
            "--driver": "info",
            "-S": "stats",
            "--statistics": "stats",
            "-a": "pause",
            "--show-pause": "pause",
        }.get(a, mode)
        if a not in ("-i", "--driver", "-S", "--statistics", "-a", "--show-pause"):
            raise CommandFailed("ethtool: bad command line argument(s)\nFor more information run ethtool -h", 1)
    if not args:
        raise CommandFailed("ethtool: bad command line argument(s)\nFor more information run ethtool -h", 1)
    name = args[0]
    dev = ctx.host.netdevs.get(name)
    if dev is None:
        if mode == "info":
            raise CommandFailed("Cannot get driver information: No such device", 71)
        if mode == "stats":
            raise CommandFailed("Cannot get stats strings information: No such device", 71)
        raise CommandFailed("netlink error: no device matches name (offset 24)\nnetlink error: No such device", 1)
    if mode == "info":
        if dev.kind == "loopback":
            raise CommandFailed("Cannot get driver information: Operation not supported", 71)
        ctx.out.write(driver_info(ctx, dev))
    elif mode == "stats":
        if dev.kind in ("loopback", "bond"):
            raise CommandFailed("no stats available", 94)
        ctx.out.write(statistics(ctx, dev))
    elif mode == "pause":
        ctx.out.write(pause(ctx, dev))
    else:
        ctx.out.write(settings(ctx, dev))
    return 0
