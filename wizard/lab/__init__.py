"""The lab: simulated RoCE GPU hosts behind real SSH/SFTP servers (``roce-wizard --demo`` and the test bed)."""

from __future__ import annotations

from wizard.lab.cluster import Lab
from wizard.lab.faults import FAULT_KINDS, Fault, parse_fault
from wizard.lab.host import Completed, SimHost
from wizard.lab.packages import DOCA_URL, make_deb

__all__ = ["DOCA_URL", "FAULT_KINDS", "Completed", "Fault", "Lab", "SimHost", "make_deb", "parse_fault"]
