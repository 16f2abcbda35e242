"""roce-wizard's engine side; never imports Textual (``screens/`` is the only package that does).

``engine/`` runs stages over hosts and keeps state, ``answers/`` is the answers model, ``cli/`` the command line,
``executors/`` reach hosts, ``parsers/`` read tool outputs, ``lab/`` is the simulated cluster, and ``validate/``,
``report/``, ``export/``, ``metrics/`` and ``switchcfg/`` are what the fabric's verification hands on.
"""

__version__ = "0.1.0"
