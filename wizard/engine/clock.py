"""The simulated lab's faster clock, shared by the lab's hosts and the engine's own waits.

``ROCE_WIZARD_LAB_TIME_SCALE`` (tests and demos use 0.01-0.1) makes the simulated hosts' sleeps and timers that much
shorter. A *safety window* is different: the revert timer of a commit-confirmed change, the window in which the
wizard must confirm it, the time a revert may take, a lock or rendezvous wait. What happens inside such a window is
the wizard's own work (SSH handshakes, Python, the event loop), which a faster lab clock does not make faster; at 1 %
of 120 s (1.2 s) a loaded 2-core machine missed every host's window and all of them rolled back. So windows never
run faster than WINDOW_MIN_SCALE, on both sides: the lab's timer and the wizard's wait use the same rule and keep
their ratio (the confirm window stays shorter than the revert timer). On real hosts the scale is 1 and nothing
changes.
"""

WINDOW_MIN_SCALE = 0.1


def window_scale(clock_scale: float) -> float:
    """The scale a safety window runs at on a clock running at ``clock_scale``."""
    return clock_scale if clock_scale >= 1.0 else max(clock_scale, WINDOW_MIN_SCALE)


def said(seconds: float, clock_scale: float) -> str:
    """A window as the operator reads it: the answers' value, and on the simulated clock the one in force."""
    scale = window_scale(clock_scale)
    return f"{seconds:g}s" if scale == 1.0 else f"{seconds:g}s ({seconds * scale:.3g}s on the simulated clock)"
