"""The stages in run order, by id: what the command line offers and what status, plans and reports follow.

The stage classes themselves are in ``steps/`` (``steps.all_steps()`` returns them in this order; a test holds the
two together). Kept apart so that a command's ``--help`` can list the stages without loading any of them.
"""

STAGE_IDS = ("discovery", "ofed", "network", "roce", "gpudirect", "nccl", "inference")
