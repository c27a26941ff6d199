"""The data layer's exceptions: one hierarchy, every message names the dataset, the file or URL and
what to do about it.

::

    DataError
    ├── UnknownDatasetError          (also KeyError and ValueError)
    ├── DataDownloadError            dataset, url
    │   ├── DownloadHTTPError        status (404, 403, 500 ...)
    │   ├── DownloadTimeoutError
    │   ├── CorruptArchiveError      not a zip / bad CRC / truncated
    │   ├── MissingSplitError        the archive lacks <Name>_TRAIN.ts or <Name>_TEST.ts
    │   ├── ChecksumMismatchError    file, expected, found (lock file or server checksum)
    │   ├── DatasetNotAvailableError offline and no local copy
    │   └── PartialDownloadError     some datasets of a batch failed (succeeded, failures)
    ├── subsets.SubsetSizeError      (also ValueError) a subset larger than its source
    └── DataFileError                path
        ├── MissingDataFileError
        ├── IncompleteDatasetError   a folder holding one split file but not the other
        ├── MalformedDataFileError
        ├── ModifiedDataError        the files differ from the archive's published sizes
        └── UnseenLabelError         (also ValueError) a test label absent from the training split
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from chorustic.errors import UserError

__all__ = [
    "DataError",
    "UnknownDatasetError",
    "DataDownloadError",
    "DownloadHTTPError",
    "DownloadTimeoutError",
    "CorruptArchiveError",
    "MissingSplitError",
    "ChecksumMismatchError",
    "DatasetNotAvailableError",
    "PartialDownloadError",
    "DataFileError",
    "MissingDataFileError",
    "MalformedDataFileError",
    "IncompleteDatasetError",
    "AmbiguousDatasetError",
    "ModifiedDataError",
    "UnseenLabelError",
]


class DataError(Exception):
    """Base class of every error raised by :mod:`chorustic.data`."""

    def __init__(self, message: str, *, dataset: str | None = None):
        super().__init__(message)
        self.message = message
        self.dataset = dataset

    def __str__(self) -> str:
        return self.message


class UnknownDatasetError(DataError, UserError, KeyError, ValueError):
    """A dataset name that is not in the registry (the message suggests close matches); a user error."""

    def __init__(self, name: str, message: str):
        super().__init__(message, dataset=name)
        self.name = name


class DataDownloadError(DataError):
    """Getting the official files of a dataset failed."""

    def __init__(self, message: str, *, dataset: str | None = None, url: str | None = None):
        super().__init__(message, dataset=dataset)
        self.url = url


class DownloadHTTPError(DataDownloadError):
    def __init__(
        self, message: str, *, dataset: str | None = None, url: str | None = None, status: int | None = None
    ):
        super().__init__(message, dataset=dataset, url=url)
        self.status = status


class DownloadTimeoutError(DataDownloadError):
    pass


class CorruptArchiveError(DataDownloadError):
    pass


class MissingSplitError(DataDownloadError):
    pass


class ChecksumMismatchError(DataDownloadError):
    def __init__(
        self,
        message: str,
        *,
        dataset: str | None = None,
        url: str | None = None,
        file: str | Path | None = None,
        expected: str | None = None,
        found: str | None = None,
    ):
        super().__init__(message, dataset=dataset, url=url)
        self.file = file
        self.expected = expected
        self.found = found


class DatasetNotAvailableError(DataDownloadError):
    pass


class PartialDownloadError(DataDownloadError):
    """Some datasets of a batch could not be provided; the others were."""

    def __init__(self, message: str, *, succeeded: Mapping[str, Path], failures: Mapping[str, DataError]):
        super().__init__(message)
        self.succeeded = dict(succeeded)
        self.failures = dict(failures)


class DataFileError(DataError):
    """A ``.ts`` file is missing, unreadable or malformed."""

    def __init__(self, message: str, *, dataset: str | None = None, path: str | Path | None = None):
        super().__init__(message, dataset=dataset)
        self.path = path


class MissingDataFileError(DataFileError):
    pass


class MalformedDataFileError(DataFileError):
    pass


class IncompleteDatasetError(DataFileError):
    """A dataset folder holds one split file but not the other; it is never replaced or completed."""


class AmbiguousDatasetError(DataFileError):
    """Two folders under the data directory hold different copies of one dataset; neither is chosen."""


class ModifiedDataError(DataFileError):
    """The files of an archive dataset differ from its published sizes (truncated, or another release)."""

    def __init__(self, message: str, *, dataset: str | None = None, path: str | Path | None = None,
                 differences: tuple[str, ...] = ()):
        super().__init__(message, dataset=dataset, path=path)
        self.differences = differences


class UnseenLabelError(DataFileError, ValueError):
    def __init__(
        self,
        message: str,
        *,
        dataset: str | None = None,
        path: str | Path | None = None,
        labels: tuple[str, ...] = (),
    ):
        super().__init__(message, dataset=dataset, path=path)
        self.labels = labels
