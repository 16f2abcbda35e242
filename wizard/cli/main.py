"""The ``roce-wizard`` entry point: dispatch to a subcommand's module (loaded only when named), and turn the
engine's errors into one line and an exit code. Without a subcommand it is the wizard itself (wizard/cli/run.py)."""

from __future__ import annotations

import sys

from wizard.errors import EXIT_FAILED, EXIT_USAGE, AnswersError, StateError, UsageError, WizardError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Sequence

# name -> (module under wizard.cli that has main(argv), what `roce-wizard --help` says of it)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "tui": ("tui", "the terminal wizard opened on an answers file (--answers FILE)"),
    "check": ("check", "test SSH, key and sudo on every host; read-only"),
    "plan": ("plan", "the ordered changes per host, reading only (or as scripts)"),
    "status": ("status", "saved progress per stage and host"),
    "verify": ("verify", "re-check every stage on every host, changing nothing: what no longer holds"),
    "rollback": ("rollback", "put back the files the wizard replaced"),
    "bwtest": ("bwtest", "RDMA bandwidth per rail and pair, latency, incast, NCCL"),
    "doctor": ("doctor", "troubleshooting trees on every host: evidence and fix"),
    "switch-config": ("switch_config", "lossless switch configuration for the ports LLDP found"),
    "inference": ("inference", "restart the serving replicas one at a time, the entry point staying up"),
    "export": ("export", "the verified design for Ansible or Kubernetes"),
    "report": ("report", "the whole run from a state directory, as HTML or JSON"),
    "metrics": ("metrics", "Prometheus exporter of PFC/ECN/CNP counters, link state"),
    "import": ("import_inventory", "an answers file from an Ansible inventory or ssh_config"),
    "schema": ("schema", "the JSON Schema of the answers file"),
    "parse": ("parse", "parse one real tool output and print it as JSON"),
    "lab": ("lab", "serve the SIMULATED cluster over SSH on 127.0.0.1"),
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    raise_open_file_limit()
    try:
        if args and args[0] in SUBCOMMANDS:
            import importlib

            module = importlib.import_module(f"wizard.cli.{SUBCOMMANDS[args[0]][0]}")
            return int(module.main(args[1:]))
        from wizard.cli import run

        return run.main(args)
    except AnswersError as exc:
        for problem in exc.problems:
            _error(f"{exc.source}: {problem}")
        return EXIT_USAGE
    except (UsageError, StateError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except WizardError as exc:
        _error(str(exc))
        return EXIT_FAILED
    except KeyboardInterrupt:
        _error("interrupted; progress is saved - run the same command again to resume")
        return 130


def _error(message: str) -> None:
    sys.stderr.write(f"roce-wizard: {message}\n")


def raise_open_file_limit(wanted: int = 65536) -> int:
    """Each host holds an SSH socket and a log file for the whole run, so 1,000 hosts need over 2,000 descriptors;
    many systems start processes with a soft limit of 1,024. Raise the soft limit towards the hard one (no privilege
    needed) and return the limit in force."""
    try:
        import resource
    except ImportError:  # not POSIX
        return -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


if __name__ == "__main__":
    raise SystemExit(main())
