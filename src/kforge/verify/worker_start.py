"""The first code a worker process runs: it confines itself by the plan the harness wrote (verify/confine.py),
then imports torch and serves as `worker.py`. Nothing a candidate could touch exists before the limits hold.

    python -m kforge.verify.worker_start --confine PLAN.json -- WORKER_ARGS...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kforge.verify import confine


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="kforge worker: confine, then serve (started by the harness)")
    parser.add_argument("--confine", type=Path, required=True, help="the Confinement, as JSON")
    parser.add_argument("worker_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    report = confine.apply(confine.Confinement.from_json(args.confine.read_text()))
    from kforge.verify import worker  # torch and everything else, only now

    worker.main([arg for arg in args.worker_args if arg != "--"], confinement=report.as_dict())


if __name__ == "__main__":
    main(sys.argv[1:])
