"""``python -m wizard.lab [serve] --hosts N``."""

from __future__ import annotations

import sys

from wizard.lab.serve import main

if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["serve"]:
        argv = argv[1:]
    sys.exit(main(argv))
