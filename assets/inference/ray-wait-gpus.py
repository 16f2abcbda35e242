"""Managed by roce-wizard (stage inference): wait until the Ray cluster holds the serving group's GPUs.

roce-wizard-inference.service runs this as ExecStartPre= on the head of a group that spans nodes. vLLM asks Ray once
for a placement group of TP x PP GPUs and gives up when the workers have not joined yet (a worker still booting
after a reboot, or restarting its raylet); waiting here keeps that from becoming a failed start.

Usage: python ray-wait-gpus.py GPUS TIMEOUT_SECONDS   (RAY_ADDRESS and the token settings come from the unit)
"""

import sys
import time

import ray


def live_gpus() -> float:
    return sum(node["Resources"].get("GPU", 0) for node in ray.nodes() if node.get("Alive"))


def main() -> int:
    need, timeout = int(sys.argv[1]), float(sys.argv[2])
    deadline = time.monotonic() + timeout
    while True:  # the head's GCS may still be starting: connecting is retried like the count
        try:
            ray.init(address="auto", logging_level="ERROR", log_to_driver=False)
            break
        except ConnectionError as exc:
            if time.monotonic() >= deadline:
                print(f"roce-wizard: no Ray cluster to join after {timeout:g} s: {exc}", file=sys.stderr)
                return 1
            time.sleep(5)
    have = live_gpus()
    while have < need:
        if time.monotonic() >= deadline:
            print(
                f"roce-wizard: after {timeout:g} s the Ray cluster has {have:g} of the {need} GPUs this group needs;"
                " check roce-wizard-ray.service on the group's other hosts",
                file=sys.stderr,
            )
            return 1
        time.sleep(5)
        have = live_gpus()
    print(f"roce-wizard: the Ray cluster has {have:g} GPUs (this group needs {need}); starting the engine", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
