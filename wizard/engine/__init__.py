"""The engine: what a stage is (``step``), the runner that drives stages over hosts, and everything a run keeps.

- ``step``: the Step contract (probe, plan, checks) every stage in ``steps/`` implements;
- ``runner``, ``plan_ahead``, ``predict``, ``prefetch``: stages in order, hosts in parallel, plans made ahead,
  read-only probes batched into one exec;
- ``apply``, ``apply_resume``, ``rollback``: changing a host with backups and a guard, resuming after a crash,
  putting files back;
- ``state``, ``state_lock``, ``host_lock``, ``logs``: saved progress, one writer per state directory and per host,
  per-host logs with secrets redacted;
- ``events``, ``outcomes``: what the runner tells its two faces (the TUI and headless mode);
- ``session``, ``conn_test``, ``interactive``: a run assembled from answers, the connection test, the TUI's helpers;
- ``plan_export``: plans printed or written as scripts.
"""
