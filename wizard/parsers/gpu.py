"""Parsers for nvidia-smi outputs: ``topo -m``, ``-L`` and ``--query-gpu ... --format=csv``."""

from __future__ import annotations

import re

from wizard.parsers.common import Parsed, ParseError

_TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_CODE = re.compile(r"^(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|C2C\d*|NVB)$")
_CODES = ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC", "NVB")
# Distance order NCCL uses for GPU<->NIC paths (src/graph/paths.cc): closer first.
_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 4}
_FUSED = re.compile(r"^([A-Z]+?)(\d[\d,\-]*)$")
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_GPU_L = re.compile(r"^\s*GPU (\d+):\s*(.+?)\s*\(UUID:\s*([^)\s]+)\)\s*$")
_MIG_L = re.compile(r"^\s*MIG\s+(\S+)\s+Device\s+(\d+):\s*\(UUID:\s*([^)\s]+)\)\s*$")
_SMI_ERRORS = re.compile(
    r"No devices were found|NVIDIA-SMI has failed|couldn't communicate with the NVIDIA driver"
    r"|is not a valid field to query|Failed to initialize NVML|Unable to determine the device handle"
)
# Driver warnings nvidia-smi prints around its output, e.g. "WARNING: infoROM is corrupted at gpu 0000:B3:00.0"
# (exit status 14, nvidia-smi(1) RETURN VALUE): kept as warnings, never read as a GPU row.
_SMI_WARNING = re.compile(r"^\s*WARNING:\s")
_PROMPT = re.compile(r"^\s*(?:[$#>]|\S+@\S+?[:\]].*?[#$])\s")
_CSV_HEADER_FIELD = re.compile(r"^[a-z][a-z0-9_.]*(?: \[[^\]]+\])?$")


def _lines(text: str) -> list[str]:
    if not text.strip():
        raise ParseError("empty input")
    return [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


class NvidiaSmiTopo(Parsed):
    """``nvidia-smi topo -m``: the connection matrix between GPUs and NICs plus CPU/NUMA affinity."""

    gpus: list[str] = []  # "GPU0", ...
    nics: list[str] = []  # column labels: "NIC0", ... or device names in old drivers ("mlx5_0")
    matrix: dict[str, dict[str, str]] = {}  # row -> column -> "X" / "NV12" / "PIX" / "PXB" / "PHB" / "NODE" / "SYS"
    cpu_affinity: dict[str, str] = {}
    numa_affinity: dict[str, str | None] = {}
    gpu_numa_id: dict[str, str | None] = {}
    nic_names: dict[str, str] = {}  # "NIC Legend:" block: NIC0 -> mlx5_0
    warnings: list[str] = []

    def nic_device(self, label: str) -> str:
        """The RDMA device name of NIC column ``label`` (old layouts already use the device name)."""
        return self.nic_names.get(label, label)

    def nearest_nics(self, gpu: str) -> list[str]:
        """Device names of the NICs closest to ``gpu`` (PIX < PXB < PHB < NODE < SYS), in column order."""
        row = self.matrix.get(gpu, {})
        ranked = [(_RANK[row[nic]], nic) for nic in self.nics if row.get(nic) in _RANK]
        if not ranked:
            return []
        best = min(rank for rank, _ in ranked)
        return [self.nic_device(nic) for rank, nic in ranked if rank == best]


class MigDevice(Parsed):
    """One ``MIG <profile> Device N: (UUID: MIG-...)`` line."""

    profile: str
    index: int
    uuid: str


class GpuListEntry(Parsed):
    """One ``GPU N: NAME (UUID: GPU-...)`` line and its MIG children."""

    index: int
    name: str
    uuid: str
    mig_devices: list[MigDevice] = []


class NvidiaSmiL(Parsed):
    """``nvidia-smi -L``."""

    gpus: list[GpuListEntry] = []
    errors: list[str] = []
    warnings: list[str] = []  # driver warnings, e.g. a corrupted infoROM


class NvidiaSmiQuery(Parsed):
    """``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``; values are kept as printed."""

    columns: list[str] = []  # field names without units; "0", "1", ... for noheader output
    units: dict[str, str] = {}  # column -> unit from the header, e.g. "memory.total" -> "MiB"
    has_header: bool = True
    rows: list[dict[str, str]] = []
    errors: list[str] = []
    warnings: list[str] = []  # driver warnings, e.g. a corrupted infoROM

    def value(self, row: dict[str, str], column: str) -> str | None:
        """The value of ``column``, None where nvidia-smi printed ``[N/A]`` / ``[Not Supported]``."""
        value = row.get(column)
        return None if value is None or value.startswith("[") or value == "N/A" else value

    def number(self, row: dict[str, str], column: str) -> float | None:
        """The numeric value of ``column`` without its unit (``350.00 W`` -> 350.0), None for ``[N/A]``."""
        value = self.value(row, column)
        m = re.match(r"^\s*(-?\d+(?:\.\d+)?)(?:\s*\S+)?\s*$", value or "")
        return float(m.group(1)) if m else None

    _number = number

    def index(self, row: dict[str, str]) -> int | None:
        """GPU index."""
        number = self._number(row, "index")
        return None if number is None else int(number)

    def memory_total_mib(self, row: dict[str, str]) -> int | None:
        """``memory.total`` in MiB (with or without the `` MiB`` suffix)."""
        number = self._number(row, "memory.total")
        return None if number is None else int(number)

    def memory_used_mib(self, row: dict[str, str]) -> int | None:
        """``memory.used`` in MiB."""
        number = self._number(row, "memory.used")
        return None if number is None else int(number)

    def pci_bus_id(self, row: dict[str, str]) -> str | None:
        """``pci.bus_id`` shortened to the lower-case form lspci/sysfs use: ``0000:e3:00.0``."""
        value = self.value(row, "pci.bus_id")
        if value is None:
            return None
        domain, _, rest = value.partition(":")
        return f"{domain[-4:]}:{rest}".lower() if rest else value.lower()

    def driver_version(self, row: dict[str, str]) -> str | None:
        """``driver_version``."""
        return self.value(row, "driver_version")


def _topo_row(cells: list[str], width: int, label: str, warnings: list[str]) -> tuple[list[str], list[str]]:
    """Split a row's fields into ``width`` matrix cells and the affinity fields that follow.

    One real output fuses the last cell with the CPU affinity (``PH0-115``: tab lost, ``PHB`` cut); such a
    cell is split and repaired when its letters are the start of exactly one code.
    """
    matrix, rest = cells[:width], cells[width:]
    for i, cell in enumerate(matrix):
        if _CODE.match(cell):
            continue
        m = _FUSED.match(cell)
        if not m:
            warnings.append(f"{label}: unexpected cell {cell!r}")
            continue
        codes = [c for c in _CODES if c.startswith(m.group(1))]
        repaired = codes[0] if len(codes) == 1 else m.group(1)
        warnings.append(f"{label}: cell {cell!r} fuses {repaired!r} with affinity {m.group(2)!r}")
        return matrix[:i] + [repaired], [m.group(2), *matrix[i + 1 :], *rest]
    return matrix, rest


def parse_nvidia_smi_topo(text: str) -> NvidiaSmiTopo:
    """Parse ``nvidia-smi topo -m`` (tabs or spaces, NIC legend or old device-name columns, no NICs)."""
    lines = _lines(text)
    header_at = next((i for i, line in enumerate(lines) if line.split()[:1] == ["GPU0"]), None)
    if header_at is None:
        raise ParseError("no topology header starting with GPU0: not nvidia-smi topo -m output")
    header = lines[header_at]
    cut = min((header.find(t) for t in _TRAILING if t in header), default=len(header))
    columns = header[:cut].split()
    trailing = [t for t in _TRAILING if t in header]
    out = NvidiaSmiTopo(
        gpus=[c for c in columns if re.fullmatch(r"GPU\d+", c)],
        nics=[c for c in columns if not re.fullmatch(r"GPU\d+", c)],
    )
    for line in lines[header_at + 1 :]:
        if m := _LEGEND.match(line):
            out.nic_names[m.group(1)] = m.group(2)
            continue
        fields = line.split()
        if not fields or fields[0] not in columns:
            continue
        label = fields[0]
        cells, rest = _topo_row(fields[1:], len(columns), label, out.warnings)
        out.matrix[label] = dict(zip(columns, cells, strict=False))
        if len(cells) < len(columns):
            out.warnings.append(f"{label}: row has {len(cells)} of {len(columns)} cells")
        for name, value in zip(trailing, rest, strict=False):
            if name == "CPU Affinity":
                out.cpu_affinity[label] = value
            elif name == "NUMA Affinity":
                out.numa_affinity[label] = None if value == "N/A" else value
            else:
                out.gpu_numa_id[label] = None if value == "N/A" else value
    return out


def parse_nvidia_smi_L(text: str) -> NvidiaSmiL:  # noqa: N802 - the tool's flag is a capital L
    """Parse ``nvidia-smi -L`` including indented MIG device lines."""
    out = NvidiaSmiL()
    for line in _lines(text):
        if _SMI_WARNING.match(line):
            out.warnings.append(line.strip())
        elif m := _GPU_L.match(line):
            out.gpus.append(GpuListEntry(index=int(m.group(1)), name=m.group(2), uuid=m.group(3)))
        elif (m := _MIG_L.match(line)) and out.gpus:
            out.gpus[-1].mig_devices.append(MigDevice(profile=m.group(1), index=int(m.group(2)), uuid=m.group(3)))
        elif _SMI_ERRORS.search(line):
            out.errors.append(line.strip())
    if not out.gpus and not out.errors:
        raise ParseError("no 'GPU N: NAME (UUID: ...)' line: not nvidia-smi -L output")
    return out


def parse_nvidia_smi_query(text: str, columns: list[str] | None = None) -> NvidiaSmiQuery:
    """Parse ``nvidia-smi --query-gpu=... --format=csv``; pass ``columns`` for ``noheader`` output."""
    out = NvidiaSmiQuery()
    records: list[list[str]] = []
    for line in _lines(text):
        if _SMI_ERRORS.search(line):
            out.errors.append(line.strip())
        elif _SMI_WARNING.match(line):
            out.warnings.append(line.strip())
        elif line.strip() and not _PROMPT.match(line) and "nvidia-smi" not in line:
            records.append([f.strip() for f in line.split(",")])
    if records and columns is None and all(_CSV_HEADER_FIELD.match(f) for f in records[0]):
        for field in records.pop(0):
            name, _, unit = field.partition(" [")
            out.columns.append(name)
            if unit:
                out.units[name] = unit.rstrip("]")
        if any(len(r) != len(out.columns) for r in records):
            raise ParseError("CSV rows do not have as many fields as the header: not nvidia-smi --query-gpu")
    elif records:
        widths = {len(r) for r in records}
        if columns is None and (len(widths) > 1 or widths == {1}):
            raise ParseError("no CSV header and no consistent comma-separated rows: not nvidia-smi --query-gpu")
        out.columns, out.has_header = columns or [str(i) for i in range(max(widths))], False
    elif not out.errors:
        raise ParseError("no CSV lines: not nvidia-smi --query-gpu --format=csv output")
    out.rows = [dict(zip(out.columns, r, strict=False)) for r in records]
    return out
