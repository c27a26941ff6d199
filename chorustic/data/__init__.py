"""The data layer: archive registry, download, ``.ts`` loading and preprocessing (paper App. C.2).

* :mod:`chorustic.data.registry`       the 128 UCR + 30 UEA datasets and their metadata
* :mod:`chorustic.data.download`       local copy / aeon wheel / download, pinned by a lock file
* :mod:`chorustic.data.subsets`        ``InsectWingbeatSubset`` (class-stratified subsample)
* :mod:`chorustic.data.loading`        ``.ts`` -> :class:`TimeSeriesDataset` (+ on-disk cache)
* :mod:`chorustic.data.preprocessing`  NaN -> 0, linear resampling to 512, label encoding
* :mod:`chorustic.data.cache`          cache keys and ``.npz`` files
* :mod:`chorustic.data.lock`           the SHA-256 lock file
* :mod:`chorustic.data.errors`         the exception hierarchy (every error is a :class:`DataError`)
"""

from chorustic.data.download import Mirror, default_mirrors, download_archive, ensure_dataset, find_local
from chorustic.data.errors import (
    ChecksumMismatchError,
    CorruptArchiveError,
    DataDownloadError,
    DataError,
    DataFileError,
    DatasetNotAvailableError,
    DownloadHTTPError,
    DownloadTimeoutError,
    AmbiguousDatasetError,
    IncompleteDatasetError,
    MalformedDataFileError,
    ModifiedDataError,
    MissingDataFileError,
    MissingSplitError,
    PartialDownloadError,
    UnknownDatasetError,
    UnseenLabelError,
)
from chorustic.data.loading import TimeSeriesDataset, load_dataset
from chorustic.data.preprocessing import MODEL_LENGTH, encode_labels, resample_linear
from chorustic.data.registry import (
    AEON_SHIPPED,
    INSECTWINGBEAT_SUBSET,
    DatasetInfo,
    SubsetSpec,
    get_info,
    list_datasets,
    registry_frame,
)

__all__ = [
    "AEON_SHIPPED",
    "INSECTWINGBEAT_SUBSET",
    "MODEL_LENGTH",
    "DatasetInfo",
    "SubsetSpec",
    "get_info",
    "list_datasets",
    "registry_frame",
    "Mirror",
    "default_mirrors",
    "ensure_dataset",
    "download_archive",
    "find_local",
    "TimeSeriesDataset",
    "load_dataset",
    "resample_linear",
    "encode_labels",
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
    "AmbiguousDatasetError",
    "IncompleteDatasetError",
    "ModifiedDataError",
    "MalformedDataFileError",
    "UnseenLabelError",
]
