"""``python -m chorustic ...`` = the ``chorustic`` command; also what ``torchrun -m chorustic pretrain ...``
starts in every process of a data-parallel pretraining run."""

import sys

from chorustic.cli import main

if __name__ == "__main__":
    sys.exit(main())
