"""The archive registry: 128 UCR + 30 UEA names, metadata, InsectWingbeatSubset, errors, CLI."""

from __future__ import annotations

import dataclasses

import pytest

from chorustic.cli import main
from chorustic.data import registry
from chorustic.data.download import aeon_data_dir
from chorustic.data.errors import DataError
from chorustic.data.loading import read_ts_split
from chorustic.data.registry import (
    AEON_SHIPPED,
    INSECTWINGBEAT_SUBSET,
    DatasetInfo,
    SubsetSpec,
    UnknownDatasetError,
    get_info,
    list_datasets,
    registry_frame,
)


def test_counts_and_order():
    ucr, uea, both = list_datasets("UCR"), list_datasets("UEA"), list_datasets()
    assert (len(ucr), len(uea), len(both)) == (128, 30, 158)
    assert both == ucr + uea  # registry order: the UCR block, then UEA
    assert len(set(both)) == 158
    assert list_datasets("ucr") == ucr  # archive is case-insensitive
    with pytest.raises(ValueError, match="unknown archive"):
        list_datasets("UCR2015")


def test_paper_names_present():
    names = set(list_datasets())
    for n in (
        "GunPoint",
        "FiftyWords",
        "PEMS-SF",
        "PLAID",
        "DodgerLoopDay",
        "EigenWorms",
        "JapaneseVowels",
        "InsectWingbeatSubset",
        "InsectWingbeatSound",
        "CharacterTrajectories",
    ):
        assert n in names, n
    assert "InsectWingbeat" not in names  # the paper's UEA-30 uses the subset


def test_insectwingbeat_subset_is_defined_from_its_source():
    sub, src = get_info("InsectWingbeatSubset"), get_info("InsectWingbeat")
    assert sub.archive == "UEA" and sub.benchmark and not src.benchmark
    assert (sub.n_train, sub.n_test) == (1000, 1000)
    assert (src.n_train, src.n_test) == (30000, 20000)
    assert (sub.n_channels, sub.n_classes, sub.equal_length) == (
        src.n_channels,
        src.n_classes,
        src.equal_length,
    )
    assert "class-stratified" in sub.flags and "seed 0" in sub.flags
    assert INSECTWINGBEAT_SUBSET == SubsetSpec("InsectWingbeatSubset", "InsectWingbeat", 1000, 1000, 0)
    assert list_datasets("UEA").index("InsectWingbeatSubset") == 15  # where InsectWingbeat was


def test_metadata_types_and_consistency():
    for name in list_datasets():
        info = get_info(name)
        assert isinstance(info, DatasetInfo) and info.name == name
        assert info.archive in ("UCR", "UEA")
        assert info.n_train > 0 and info.n_test > 0 and info.length > 0 and info.n_classes >= 2
        assert (info.n_channels == 1) == (info.archive == "UCR"), name
        if not info.equal_length:
            assert "variable length" in info.flags, name
        if info.missing_values:
            assert "missing" in info.flags, name
    assert get_info("DodgerLoopDay").missing_values and not get_info("GesturePebbleZ1").equal_length
    assert get_info("JapaneseVowels") == dataclasses.replace(get_info("JapaneseVowels"))  # frozen, hashable
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_info("GunPoint").n_train = 1  # type: ignore[misc]


def test_unknown_name_error_suggests_close_matches():
    with pytest.raises(UnknownDatasetError) as e:
        get_info("GunPiont")
    err = e.value
    assert isinstance(err, KeyError) and isinstance(err, ValueError) and isinstance(err, DataError)
    assert "'GunPoint'" in str(err) and "GunPiont" in str(err)
    with pytest.raises(UnknownDatasetError, match="'GunPoint'"):
        get_info("gunpoint")  # wrong case: suggested, not silently accepted
    with pytest.raises(KeyError):
        get_info("NoSuchDatasetAtAll")


def test_registry_frame():
    df = registry_frame("UEA")
    assert len(df) == 30 and list(df["name"]) == list_datasets("UEA")
    assert {f.name for f in dataclasses.fields(DatasetInfo)} <= set(df.columns)
    assert df.loc[df["name"] == "PEMS-SF", "n_channels"].item() == 963
    assert len(registry_frame()) == 158


def test_aeon_shipped_are_in_the_wheel_and_match_the_registry():
    """Read the wheel's files: the registry's sizes/channels/classes are those of the real data."""
    assert len(AEON_SHIPPED) == 8 and set(AEON_SHIPPED) <= set(list_datasets())
    for name in AEON_SHIPPED:
        folder = aeon_data_dir() / name
        info = get_info(name)
        X_tr, y_tr, _ = read_ts_split(folder / f"{name}_TRAIN.ts", name)
        X_te, y_te, _ = read_ts_split(folder / f"{name}_TEST.ts", name)
        assert (len(X_tr), len(X_te)) == (info.n_train, info.n_test), name
        assert X_tr[0].shape[0] == info.n_channels, name
        assert len(set(y_tr)) == info.n_classes, name
        lengths = {x.shape[-1] for x in list(X_tr) + list(X_te)}
        assert max(lengths) == info.length, name
        assert (len(lengths) == 1) == info.equal_length, name


def test_datasets_command(capsys):
    assert main(["datasets", "--archive", "UEA"]) == 0
    out = capsys.readouterr().out
    assert "InsectWingbeatSubset" in out and "GunPoint" not in out and "30 datasets (30 UEA)" in out
    assert main(["datasets", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("name,archive,n_train,n_test,length,n_channels,n_classes")
    assert len(lines) == 1 + 158


def test_module_docstring_documents_the_subset():
    doc = registry.__doc__
    assert "1000 training and 1000 test" in doc and "seed = 0" in doc


def test_an_unknown_dataset_names_the_route_for_a_dataset_of_ones_own():
    """72.10: one rule everywhere: the workflow refuses a dataset the registry lacks, and says where one's own
    data goes (docs/reproducing.md, "Classify a dataset of your own", runs that route in tests/test_docs.py)."""
    import pytest

    from chorustic.data.errors import UnknownDatasetError
    from chorustic.data.registry import get_info

    with pytest.raises(UnknownDatasetError) as exc:
        get_info("MyData")
    msg = str(exc.value)
    assert "Did you mean 'Meat'?" in msg and "Classify a dataset of your own" in msg and "chorustic preprocess" in msg
