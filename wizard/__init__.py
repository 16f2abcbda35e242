"""roce-wizard engine: answers, executors, runner, state. Never imports Textual."""

__version__ = "0.1.0"
