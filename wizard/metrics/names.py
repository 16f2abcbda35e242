"""The metrics the exporter emits (name, type, help, labels) and where other exporters expose the same counter.

Names follow the Prometheus conventions: base units (seconds, bytes), ``_total`` on counters, one metric per
meaning with the variable part in labels (priority, direction). ``same_as`` names the series that node_exporter
(netclass, ethtool and infiniband collectors, checked against prometheus/node_exporter collector/*_linux.go) shows
for the same kernel value, so a dashboard can be moved between the two. The DCGM exporter reads GPUs, not these
NIC port counters; nothing here has a DCGM equivalent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PORT_LABELS = ("host", "netdev", "rdma_device", "rail")


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric family: ``name`` is the sample name as scraped (counters end in ``_total``)."""

    name: str
    kind: str  # "counter" or "gauge"
    help: str
    labels: tuple[str, ...]
    same_as: str = ""

    @property
    def family(self) -> str:
        """The family name prometheus_client wants (a counter's name without ``_total``)."""
        return self.name.removesuffix("_total") if self.kind == "counter" else self.name


def _port(name: str, kind: str, help_: str, extra: tuple[str, ...] = (), same_as: str = "") -> Metric:
    return Metric(name, kind, help_, PORT_LABELS + extra, same_as)


CATALOGUE: tuple[Metric, ...] = (
    # -- ethtool -S (mlx5e per-port and per-priority counters) ---------------------------------------------------
    _port("roce_port_pfc_pause_frames_total", "counter", "PFC pause frames per priority (ethtool -S "
          "rx_prio<p>_pause / tx_prio<p>_pause; rx: the link partner paused us)", ("priority", "direction"),
          "node_ethtool_received_prio<p>_pause / node_ethtool_transmitted_prio<p>_pause{device}"),
    _port("roce_port_pfc_pause_duration_seconds_total", "counter", "Time paused by PFC per priority (ethtool -S "
          "<dir>_prio<p>_pause_duration, microseconds in the driver)", ("priority", "direction"),
          "node_ethtool_received_prio<p>_pause_duration (microseconds)"),
    _port("roce_port_pfc_pause_transitions_total", "counter", "XOFF to XON transitions per priority (ethtool -S "
          "rx_prio<p>_pause_transition)", ("priority",)),
    _port("roce_port_pfc_enabled", "gauge", "1 when PFC is on for the priority (mlx5e lists per-priority pause "
          "counters only for PFC-enabled priorities)", ("priority",)),
    _port("roce_port_global_pause_frames_total", "counter", "Global (802.3x) pause frames, counted when PFC is "
          "off (ethtool -S <dir>_global_pause)", ("direction",), "node_ethtool_received_global_pause"),
    _port("roce_port_global_pause_duration_seconds_total", "counter", "Time paused by global pause frames",
          ("direction",)),
    _port("roce_port_discards_total", "counter", "Packets the port discarded (ethtool -S rx_discards_phy / "
          "tx_discards_phy: no buffer in the NIC)", ("direction",),
          "node_ethtool_received_discards_phy / node_ethtool_transmitted_discards_phy"),
    _port("roce_port_priority_rx_discards_total", "counter", "Received packets discarded per priority (ethtool -S "
          "rx_prio<p>_discards); non-zero on the lossless priority means PFC did not protect it", ("priority",)),
    _port("roce_port_priority_bytes_total", "counter", "Bytes per priority (ethtool -S <dir>_prio<p>_bytes)",
          ("priority", "direction")),
    _port("roce_port_priority_packets_total", "counter", "Packets per priority (ethtool -S <dir>_prio<p>_packets)",
          ("priority", "direction")),
    _port("roce_port_rx_out_of_buffer_total", "counter", "Packets dropped for lack of a receive buffer on the "
          "host (ethtool -S rx_out_of_buffer)"),
    _port("roce_port_rx_crc_errors_total", "counter", "Frames received with a bad CRC (ethtool -S "
          "rx_crc_errors_phy)", same_as="node_ethtool_received_crc_errors_phy"),
    _port("roce_port_rx_symbol_errors_total", "counter", "Physical symbol errors (ethtool -S rx_symbol_err_phy)"),
    _port("roce_port_link_down_events_total", "counter", "Times the physical link went down (ethtool -S "
          "link_down_events_phy)", same_as="node_ethtool_link_down_events_phy"),
    # -- RDMA hw_counters (/sys/class/infiniband/<dev>/ports/<n>/hw_counters) ----------------------------------
    _port("roce_port_out_of_sequence_packets_total", "counter", "Packets the responder received out of sequence "
          "(hw_counters/out_of_sequence: a drop somewhere on the path)"),
    _port("roce_port_packet_sequence_errors_total", "counter", "NAK-sequence errors the requester received "
          "(hw_counters/packet_seq_err)"),
    _port("roce_port_local_ack_timeouts_total", "counter", "Requester ACK timeouts followed by a resend "
          "(hw_counters/local_ack_timeout_err)"),
    _port("roce_port_ecn_marked_packets_total", "counter", "RoCE packets received with ECN CE marked "
          "(hw_counters/np_ecn_marked_roce_packets)"),
    _port("roce_port_cnp_sent_total", "counter", "CNPs sent as DCQCN notification point (hw_counters/np_cnp_sent)"),
    _port("roce_port_cnp_handled_total", "counter", "CNPs handled as DCQCN reaction point: the sender slowed "
          "down (hw_counters/rp_cnp_handled)"),
    _port("roce_port_cnp_ignored_total", "counter", "CNPs ignored because the reaction point is off for that "
          "priority (hw_counters/rp_cnp_ignored)"),
    _port("roce_port_rdma_out_of_buffer_total", "counter", "RDMA packets dropped for lack of a receive WQE "
          "(hw_counters/out_of_buffer)"),
    # -- link state (/sys/class/net/<netdev>, /sys/class/infiniband/<dev>/ports/<n>/state) ---------------------
    _port("roce_port_link_up", "gauge", "1 when the port has carrier (/sys/class/net/<netdev>/carrier)",
          same_as="node_network_carrier{device}"),
    _port("roce_port_rdma_state_id", "gauge", "RDMA port state (1 down, 2 init, 3 armed, 4 active, 5 act defer)",
          same_as="node_infiniband_state_id{device,port}"),
    _port("roce_port_speed_bytes", "gauge", "Negotiated link speed in bytes per second",
          same_as="node_network_speed_bytes{device}"),
    _port("roce_port_mtu_bytes", "gauge", "Interface MTU", same_as="node_network_mtu_bytes{device}"),
    _port("roce_port_carrier_changes_total", "counter", "Carrier transitions (up and down) since boot",
          same_as="node_network_carrier_changes_total{device}"),
    _port("roce_port_ecn_enabled", "gauge", "1 when ECN (DCQCN) is on for the lossless priority, per role "
          "(np: notification point, rp: reaction point; /sys/class/net/<netdev>/ecn/roce_<role>/enable/<p>)",
          ("role", "priority")),
    # -- the exporter, per host and for the cluster -------------------------------------------------------------
    Metric("roce_wizard_host_up", "gauge", "1 when this scrape read the host", ("host",)),
    Metric("roce_wizard_host_scrape_stale", "gauge", "1 when the host's port metrics are missing from this scrape "
           "(timed out, unreachable, failed, or no RDMA port known)", ("host",)),
    Metric("roce_wizard_host_scrape_error", "gauge", "1 for the reason the host's read failed in this scrape",
           ("host", "reason")),
    Metric("roce_wizard_host_scrape_duration_seconds", "gauge", "How long the host's read took (at most the "
           "scrape timeout)", ("host",)),
    Metric("roce_wizard_host_last_success_timestamp_seconds", "gauge", "Unix time of the host's last complete "
           "read", ("host",)),
    Metric("roce_wizard_host_ports", "gauge", "RDMA Ethernet ports (rails) known on the host", ("host",)),
    Metric("roce_wizard_lint_status", "gauge", "Cross-host consistency lint (wizard/validate/lint.py): 0 pass, "
           "1 warn, 2 fail", ("check",)),
    Metric("roce_wizard_lint_last_run_timestamp_seconds", "gauge", "Unix time the lint last ran", ()),
    Metric("roce_wizard_lossless_priority", "gauge", "1 for the priority the answers make lossless (PFC)",
           ("priority",)),
    Metric("roce_wizard_simulated", "gauge", "1 when the hosts are the simulated lab (--demo)", ()),
    Metric("roce_wizard_scrape_duration_seconds", "gauge", "How long the whole scrape took", ()),
)  # fmt: skip

BY_NAME: dict[str, Metric] = {m.name: m for m in CATALOGUE}
LINT_STATUS = {"pass": 0, "warn": 1, "fail": 2}

# ethtool -S counter -> (metric, labels from the match groups, scale to the metric's unit)
_DIR = ("direction",)
ETHTOOL: tuple[tuple[re.Pattern[str], str, tuple[str, ...], float], ...] = tuple(
    (re.compile(p), name, groups, scale)
    for p, name, groups, scale in (
        (r"^(rx|tx)_prio([0-7])_pause$", "roce_port_pfc_pause_frames_total", ("direction", "priority"), 1.0),
        (
            r"^(rx|tx)_prio([0-7])_pause_duration$",
            "roce_port_pfc_pause_duration_seconds_total",
            ("direction", "priority"),
            1e-6,
        ),
        (r"^rx_prio([0-7])_pause_transition$", "roce_port_pfc_pause_transitions_total", ("priority",), 1.0),
        (r"^(rx|tx)_global_pause$", "roce_port_global_pause_frames_total", _DIR, 1.0),
        (r"^(rx|tx)_global_pause_duration$", "roce_port_global_pause_duration_seconds_total", _DIR, 1e-6),
        (r"^(rx|tx)_discards_phy$", "roce_port_discards_total", _DIR, 1.0),
        (r"^rx_prio([0-7])_discards$", "roce_port_priority_rx_discards_total", ("priority",), 1.0),
        (r"^(rx|tx)_prio([0-7])_bytes$", "roce_port_priority_bytes_total", ("direction", "priority"), 1.0),
        (r"^(rx|tx)_prio([0-7])_packets$", "roce_port_priority_packets_total", ("direction", "priority"), 1.0),
        (r"^rx_out_of_buffer$", "roce_port_rx_out_of_buffer_total", (), 1.0),
        (r"^rx_crc_errors_phy$", "roce_port_rx_crc_errors_total", (), 1.0),
        (r"^rx_symbol_err_phy$", "roce_port_rx_symbol_errors_total", (), 1.0),
        (r"^link_down_events_phy$", "roce_port_link_down_events_total", (), 1.0),
    )  # fmt: skip
)

# RDMA hw_counters file -> metric
HW_COUNTERS: dict[str, str] = {
    "out_of_sequence": "roce_port_out_of_sequence_packets_total",
    "packet_seq_err": "roce_port_packet_sequence_errors_total",
    "local_ack_timeout_err": "roce_port_local_ack_timeouts_total",
    "np_ecn_marked_roce_packets": "roce_port_ecn_marked_packets_total",
    "np_cnp_sent": "roce_port_cnp_sent_total",
    "rp_cnp_handled": "roce_port_cnp_handled_total",
    "rp_cnp_ignored": "roce_port_cnp_ignored_total",
    "out_of_buffer": "roce_port_rdma_out_of_buffer_total",
}
