"""Worker process of a supervised evaluation job: ``python -m chorustic.evaluation.worker SPEC.json [--resume]``."""

from __future__ import annotations

import argparse
import json
import os
import sys

from chorustic.evaluation.job import JobSpec, run_job
from chorustic.evaluation.supervisor import thread_env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chorustic.evaluation.worker")
    parser.add_argument("spec")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)
    with open(args.spec) as fh:
        spec = JobSpec.from_dict(json.load(fh))
    # The job's threads for every library the method loads (torch reads OMP_NUM_THREADS when it loads): the
    # supervisor sets them already, a worker started by hand gets them here. torch is not imported here: a
    # method that does not use it (1NN-DTW) would hold its libraries for nothing, 190 MB with the
    # CPU build and 470 MB with the CUDA build (benchmarks/results/archive_scale.md, "torch's build").
    os.environ.update(thread_env(spec.n_jobs, {}))
    try:
        run_job(spec, resume=args.resume)
    except Exception as exc:  # outside one context: the supervisor records this reason for every context left
        import traceback

        from chorustic.errors import NoSpaceError
        from chorustic.evaluation.job import _format_error

        if isinstance(exc, NoSpaceError):  # a full disk: one line naming the file, no traceback
            print(f"chorustic worker: {exc}", file=sys.stderr, flush=True)
        else:
            traceback.print_exc()
        try:
            with open(args.spec + ".error", "w", encoding="utf-8") as fh:
                fh.write(_format_error(exc))
        except OSError:  # the disk is full: the supervisor falls back to the exit status
            pass
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
