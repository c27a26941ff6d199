"""A full disk for the tests (tests/fault_plugins.py, ``full_disk``): every Python process started with this
folder first on ``PYTHONPATH`` runs this at start-up and fails the ``fsync`` of the files matching
``$CHORUSTIC_TEST_FULL_DISK`` with ``[Errno 28] No space left on device``."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fault_plugins import full_disk  # noqa: E402

if not getattr(os.fsync, "full_disk", False):
    os.fsync = full_disk(os.fsync)
del sys.path[0]
