"""The answers file: the one validated model the TUI and headless mode both run from, and where it comes from.

- ``model``: the top-level model and ``load_answers``; ``sections``: one section per stage;
- ``validators``: host names, interfaces, addresses, subnets; ``yamlio``: YAML with line numbers for errors;
- ``ranges``: ``gpu[001-256]`` host ranges; ``numbering``: rail host numbers;
- ``inventory``, ``inventory_import``: hosts from Ansible inventories or ssh_config;
- ``profiles``: the simulated clusters of ``--demo`` and ``--profile``; ``write``: answers saved back out.
"""
