"""Fault table, data side: damaged, partial, modified or odd dataset files, through the real CLI.

Each row: a fault, how it is injected into a small copy of a real dataset (the ones inside the aeon
wheel) or a generated one, the command a user runs, and what the user gets: the exit status, the words
the message must contain (the file or dataset and the next step), and the state of the user's files
afterwards (never deleted, replaced or re-coded). docs/troubleshooting.md
lists the same faults.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from chorustic.cli import main
from chorustic.data.download import aeon_data_dir
from chorustic.io import sha256_file

AEON = aeon_data_dir()


def _copy(root: Path, name: str, splits=("TRAIN", "TEST")) -> Path:
    folder = root / "raw" / name
    folder.mkdir(parents=True, exist_ok=True)
    for s in splits:
        shutil.copyfile(AEON / name / f"{name}_{s}.ts", folder / f"{name}_{s}.ts")
    return folder


def _lines(path: Path) -> tuple[list[str], list[str]]:
    """(header lines up to and including @data, data lines) of a .ts file."""
    text = path.read_text().splitlines(keepends=True)
    i = next(k for k, ln in enumerate(text) if ln.strip().lower() == "@data")
    return text[: i + 1], text[i + 1 :]


def _write_generated(
    folder: Path,
    name: str,
    train_labels: list[str],
    test_labels: list[str],
    header_labels: list[str] | None = None,
) -> None:
    """A small univariate dataset (length 20) that is not in the registry, with the given labels."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for split, labels in (("TRAIN", train_labels), ("TEST", test_labels)):
        head = [
            f"@problemName {name}",
            "@timeStamps false",
            "@missing false",
            "@univariate true",
            "@equalLength true",
            "@seriesLength 20",
            f"@classLabel true {' '.join(header_labels or sorted(set(train_labels) | set(test_labels)))}",
            "@data",
        ]
        rows = [
            ",".join(f"{v:.4f}" for v in rng.normal(size=20) + (i % 3)) + f":{y}"
            for i, y in enumerate(labels)
        ]
        (folder / f"{name}_{split}.ts").write_text("\n".join(head + rows) + "\n")


@dataclasses.dataclass
class Fault:
    id: str
    fault: str
    inject: Callable[[Path], None]
    """Prepares ``<root>/raw`` (the data dir) and anything else the command needs."""
    argv: list[str]
    """The command, with ``{root}`` for the test folder."""
    exit: int
    says: tuple[str, ...]
    """Fragments of the message (stdout + stderr) the user gets."""
    check: Callable[[Path], None] | None = None
    """Assertions on the files afterwards (the user's data intact, what was recorded)."""
    patch: Callable[[pytest.MonkeyPatch, Path], None] | None = None
    """Only where the fault cannot be injected for real (root ignores a read-only folder)."""


def _preprocess(name: str, *extra: str) -> list[str]:
    return [
        "preprocess",
        name,
        "--data-dir",
        "{root}/raw",
        "--cache-dir",
        "{root}/cache",
        "--offline",
        "--no-progress",
        "--json",
        "{root}/summary.json",
        *extra,
    ]


def _download(name: str, *extra: str) -> list[str]:
    return ["download", name, "--data-dir", "{root}/raw", "--offline", "--no-progress", *extra]


# -- injections ---------------------------------------------------------------------------------------
def filed_under(name: str, sub: str, second: str | None = None):
    """A copy of ``name`` under ``raw/<sub>/`` (the other archive's folder); with ``second``, an edited copy
    under ``raw/<second>/`` too."""

    def inject(root: Path) -> None:
        folder = root / "raw" / sub / name
        folder.mkdir(parents=True)
        for s in ("TRAIN", "TEST"):
            shutil.copyfile(AEON / name / f"{name}_{s}.ts", folder / f"{name}_{s}.ts")
        if second is not None:
            other = root / "raw" / second / name
            shutil.copytree(folder, other)
            p = other / f"{name}_TEST.ts"
            p.write_text(p.read_text().replace("@problemName", "# my edits\n@problemName", 1))

    return inject


def used_in_place(name: str, sub: str):
    def check(root: Path) -> None:
        assert not (root / "raw" / name).exists(), "an official copy was installed next to the user's"
        lock = json.loads((root / "raw" / "chorustic-data.lock.json").read_text())
        assert lock["datasets"][name]["source"] == "local", lock["datasets"][name]

    return check


def only_train(name: str, edit: bool = False, generate: bool = False):
    def inject(root: Path) -> None:
        if generate:  # a dataset that is not inside aeon
            folder = root / "raw" / name
            _write_generated(folder, name, ["1", "2"] * 3, ["1"])
            (folder / f"{name}_TEST.ts").unlink()
        else:
            folder = _copy(root, name, ("TRAIN",))
        if edit:  # the user's own variant of the training file
            p = folder / f"{name}_TRAIN.ts"
            p.write_text(p.read_text().replace("@problemName", "# my edits\n@problemName", 1))
        os.chmod(folder, 0o755)
        (root / "before.json").write_text(
            json.dumps(
                {"sha": sha256_file(folder / f"{name}_TRAIN.ts"), "mode": stat.S_IMODE(folder.stat().st_mode)}
            )
        )

    return inject


def train_untouched(name: str):
    def check(root: Path) -> None:
        folder = root / "raw" / name
        before = json.loads((root / "before.json").read_text())
        assert sha256_file(folder / f"{name}_TRAIN.ts") == before["sha"], "the user's TRAIN file was changed"
        assert not (folder / f"{name}_TEST.ts").exists(), (
            "a TEST file was added next to the user's TRAIN file"
        )
        assert stat.S_IMODE(folder.stat().st_mode) == before["mode"]

    return check


def truncate_test_at_line(name: str, keep: int):
    def inject(root: Path) -> None:
        p = _copy(root, name) / f"{name}_TEST.ts"
        head, data = _lines(p)
        p.write_text("".join(head + data[:keep]))

    return inject


def truncate_test_mid_line(name: str):
    def inject(root: Path) -> None:
        p = _copy(root, name) / f"{name}_TEST.ts"
        head, data = _lines(p)
        p.write_text("".join(head + data[:10]) + data[10][: len(data[10]) // 2])

    return inject


def edit_header(name: str, old: str, new: str, split: str = "TEST"):
    def inject(root: Path) -> None:
        p = _copy(root, name) / f"{name}_{split}.ts"
        text = p.read_text()
        assert old in text
        p.write_text(text.replace(old, new, 1))

    return inject


def relabel_one_test_series(name: str, label: str):
    def inject(root: Path) -> None:
        p = _copy(root, name) / f"{name}_TEST.ts"
        head, data = _lines(p)
        data[0] = data[0].rstrip("\n").rsplit(":", 1)[0] + f":{label}\n"
        p.write_text("".join(head + data))

    return inject


def cut_last_label(name: str):
    def inject(root: Path) -> None:
        p = _copy(root, name) / f"{name}_TEST.ts"
        head, data = _lines(p)
        k = next(i for i in range(len(data) - 1, -1, -1) if data[i].rstrip("\n").endswith(":10"))
        p.write_text(
            "".join(head + data[:k]) + data[k].rstrip("\n")[:-1]
        )  # "...:10" -> "...:1", no line break

    return inject


def damaged_cache(name: str):
    def inject(root: Path) -> None:
        from chorustic.data import load_dataset

        _copy(root, name)
        ds = load_dataset(name, root / "raw", cache_dir=root / "cache", offline=True)
        blob = bytearray(ds.cache_path.read_bytes())
        blob[len(blob) // 2] ^= 0xFF
        ds.cache_path.write_bytes(bytes(blob))

    return inject


def same_arrays_as_fresh(name: str):
    def check(root: Path) -> None:
        from chorustic.data import load_dataset

        cached = load_dataset(name, root / "raw", cache_dir=root / "cache", offline=True)
        fresh = load_dataset(name, root / "raw", offline=True)
        np.testing.assert_array_equal(cached.X_train, fresh.X_train)
        np.testing.assert_array_equal(cached.X_test, fresh.X_test)

    return check


def replace_file(name: str, split: str, content: bytes):
    def inject(root: Path) -> None:
        (_copy(root, name) / f"{name}_{split}.ts").write_bytes(content)

    return inject


def swap_splits(name: str):
    def inject(root: Path) -> None:
        folder = _copy(root, name)
        tr, te = folder / f"{name}_TRAIN.ts", folder / f"{name}_TEST.ts"
        tmp = folder / "x"
        tr.rename(tmp)
        te.rename(tr)
        tmp.rename(te)

    return inject


def other_datasets_test(name: str, other: str):
    def inject(root: Path) -> None:
        folder = _copy(root, name)
        shutil.copyfile(AEON / other / f"{other}_TEST.ts", folder / f"{name}_TEST.ts")

    return inject


def generated(name: str, train: list[str], test: list[str], header: list[str] | None = None):
    def inject(root: Path) -> None:
        _write_generated(root / "raw" / name, name, train, test, header)

    return inject


def crlf(name: str):
    def inject(root: Path) -> None:
        folder = _copy(root, name)
        for p in folder.glob("*.ts"):
            p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))

    return inject


def nothing(root: Path) -> None:
    (root / "raw").mkdir(parents=True, exist_ok=True)


def edited_after_pinning(name: str):
    def inject(root: Path) -> None:
        _copy(root, name)
        assert main(_download_args(root, name)) == 0  # first use pins the checksums in the lock file
        p = root / "raw" / name / f"{name}_TEST.ts"
        head, data = _lines(p)
        data[3] = data[3].replace("1", "2", 1)
        p.write_text("".join(head + data))

    return inject


def values_edited(name: str, split: str = "TEST", rows=(3, 10)):
    """A local copy with some values changed and every size kept (the registry check cannot see it)."""

    def inject(root: Path) -> None:
        p = _copy(root, name) / f"{name}_{split}.ts"
        head, data = _lines(p)
        for k in rows:
            values = data[k].split(",")
            values[5] = f"{float(values[5]) + 0.5:.6f}"
            data[k] = ",".join(values)
        p.write_text("".join(head + data))

    return inject


def missing_values_switched_on(name: str):
    """``@missing true`` and two values of two training series replaced by ``?``: sizes unchanged."""

    def inject(root: Path) -> None:
        p = _copy(root, name) / f"{name}_TRAIN.ts"
        head, data = _lines(p)
        head = [ln.replace("@missing false", "@missing true") for ln in head]
        for k in (0, 4):
            values = data[k].split(",")
            values[3:5] = ["?", "?"]
            data[k] = ",".join(values)
        p.write_text("".join(head + data))

    return inject


def white_space_added(name: str):
    def inject(root: Path) -> None:
        p = _copy(root, name) / f"{name}_TEST.ts"
        p.write_text("".join(ln.rstrip("\n") + "  \n" for ln in p.read_text().splitlines(keepends=True)))

    return inject


def another_official_layout(name: str):
    """The same release laid out as the archive's own copy is (other comments, fields aeon's copy does not
    declare, numbers written with other digits): another official copy, not a modification."""

    def inject(root: Path) -> None:
        p = _copy(root, name) / f"{name}_TRAIN.ts"
        head, data = _lines(p)
        head = [ln for ln in head if not ln.startswith("#")]
        head = ["# a copy of the archive's release\n"] + head[:-1] + ["@equalLength true\n", "@data\n"]
        values = data[0].split(",")
        values[0] = f"{float(values[0]):.10f}"  # -1.9630089 -> -1.9630089000
        data[0] = ",".join(values)
        p.write_text("".join(head + data))

    return inject


def edited_after_pinning_then_accepted(name: str):
    """Copied from aeon by the harness (pinned as official), edited, accepted with --update-lock."""

    def inject(root: Path) -> None:
        (root / "raw").mkdir(parents=True)
        assert main(_download_args(root, name)) == 0
        values_edited(name)(root)  # the copy is edited in place (same folder)
        assert main(_download_args(root, name) + ["--update-lock"]) == 0

    return inject


def _download_args(root: Path, name: str) -> list[str]:
    return [a.format(root=root) for a in _download(name)]


def read_only_data_dir(root: Path) -> None:
    (root / "raw").mkdir(parents=True)
    os.chmod(root / "raw", 0o555)


def root_ignores_read_only(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """As root, a 0555 folder is still writable: make writing into it fail as it does for anyone else."""
    if os.geteuid() != 0:
        return
    import tempfile

    from chorustic.data import _fs, lock

    real_mkdtemp, real_mkdir = tempfile.mkdtemp, Path.mkdir

    def mkdtemp(*a, dir=None, **k):
        if dir is not None and Path(dir).resolve().is_relative_to((root / "raw").resolve()):
            raise PermissionError(13, "Permission denied", str(dir))
        return real_mkdtemp(*a, dir=dir, **k)

    def mkdir(self, *a, **k):
        if (
            self.resolve().is_relative_to((root / "raw").resolve())
            and self.resolve() != (root / "raw").resolve()
        ):
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *a, **k)

    monkeypatch.setattr(_fs.tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(Path, "mkdir", mkdir)
    assert lock  # the lock file goes elsewhere (--lock-file)


# -- checks -------------------------------------------------------------------------------------------
def summary(root: Path, name: str) -> dict:
    return json.loads((root / "summary.json").read_text())["datasets"][name]


def classes_are(name: str, classes: list[str]):
    def check(root: Path) -> None:
        assert summary(root, name)["classes"] == classes

    return check


def modification_recorded(name: str, fragment: str):
    def check(root: Path) -> None:
        mods = summary(root, name)["modifications"]
        assert any(fragment in m for m in mods), mods

    return check


def aeon_copy_with_normal_permissions(name: str):
    def check(root: Path) -> None:
        folder = root / "raw" / name
        mask = os.umask(0)
        os.umask(mask)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~mask
        for p in folder.glob("*.ts"):
            assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask
            assert sha256_file(p) == sha256_file(AEON / name / p.name)

    return check


def same_arrays_as_lf(name: str):
    def check(root: Path) -> None:
        from chorustic.data import load_dataset

        lf = load_dataset(name, root / "lf", offline=True, lock=False)
        crlf_ds = load_dataset(name, root / "raw", offline=True, lock=False)
        np.testing.assert_array_equal(lf.X_test, crlf_ds.X_test)
        np.testing.assert_array_equal(lf.y_test, crlf_ds.y_test)

    return check


def crlf_and_lf(name: str):
    def inject(root: Path) -> None:
        crlf(name)(root)
        folder = root / "lf" / name
        folder.mkdir(parents=True)
        for s in ("TRAIN", "TEST"):
            shutil.copyfile(AEON / name / f"{name}_{s}.ts", folder / f"{name}_{s}.ts")

    return inject


def nothing_written_in(root: Path) -> None:
    assert list((root / "raw").iterdir()) == []
    assert json.loads((root / "lock.json").read_text())["datasets"]["GunPoint"]["source"] == "aeon"


def edit_kept(name: str):
    def check(root: Path) -> None:  # the user's edited file is not replaced by the official one
        assert sha256_file(root / "raw" / name / f"{name}_TEST.ts") != sha256_file(AEON / name / f"{name}_TEST.ts")

    return check


def nothing_recorded(name: str):
    def check(root: Path) -> None:
        assert summary(root, name)["modifications"] == []

    return check


def official_record_kept(name: str):
    def check(root: Path) -> None:
        entry = json.loads((root / "raw" / "chorustic-data.lock.json").read_text())["datasets"][name]
        assert entry["source"] == "local" and entry["official"]["source"] == "aeon"
        official = entry["official"]["files"][f"{name}_TEST.ts"]
        assert official == sha256_file(AEON / name / f"{name}_TEST.ts") != entry["files"][f"{name}_TEST.ts"]

    return check


def file_untouched_and_lock_kept(name: str):
    def check(root: Path) -> None:
        assert (root / "raw" / name / f"{name}_TEST.ts").is_file()
        lock = json.loads((root / "raw" / "chorustic-data.lock.json").read_text())
        assert (
            sha256_file(root / "raw" / name / f"{name}_TEST.ts")
            != lock["datasets"][name]["files"][f"{name}_TEST.ts"]
        )

    return check


FAULTS = [
    # case 1: a user's data deleted or overwritten
    Fault(
        "D01",
        "TRAIN present, TEST missing (a dataset inside aeon), offline",
        only_train("GunPoint"),
        _download("GunPoint"),
        1,
        ("GunPoint_TEST.ts", "never replaces", "move the folder"),
        train_untouched("GunPoint"),
    ),
    Fault(
        "D02",
        "the user's edited TRAIN file, TEST missing (inside aeon): never replaced by aeon's copy",
        only_train("GunPoint", edit=True),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TEST.ts", "never replaces"),
        train_untouched("GunPoint"),
    ),
    Fault(
        "D03",
        "TRAIN present, TEST missing, a dataset not inside aeon, offline",
        only_train("Coffee", generate=True),
        _download("Coffee"),
        1,
        ("Coffee_TEST.ts", "never replaces"),
        train_untouched("Coffee"),
    ),
    Fault(
        "D04",
        "a dataset inside aeon not in the data folder: copied with normal permissions",
        nothing,
        _download("BasicMotions"),
        0,
        ("BasicMotions",),
        aeon_copy_with_normal_permissions("BasicMotions"),
    ),
    Fault(
        "D05",
        "read-only data folder, a dataset inside aeon missing from it, lock file elsewhere",
        read_only_data_dir,
        _preprocess("GunPoint", "--lock-file", "{root}/lock.json"),
        0,
        ("GunPoint",),
        nothing_written_in,
        patch=root_ignores_read_only,
    ),
    # case 2: labels silently re-coded
    Fault(
        "D06",
        "labels that differ only by case (Up/up) stay two classes, spelled as written",
        generated("MyUpDown", ["Up", "up", "Up", "up", "Up", "up"], ["up", "Up"]),
        _preprocess("MyUpDown"),
        0,
        ("2 classes",),
        classes_are("MyUpDown", ["Up", "up"]),
    ),
    Fault(
        "D07",
        "two spellings of one number (1 and 1.0) are an error, not two classes",
        generated("MyNumbers", ["1", "2", "1.0", "2", "1", "2"], ["1", "2"]),
        _preprocess("MyNumbers"),
        1,
        ("'1' and '1.0'", "same number", "MyNumbers"),
    ),
    Fault(
        "D08",
        "a class label the @classLabel header does not declare",
        relabel_one_test_series("GunPoint", "3"),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TEST.ts", "'3'", "not declared in @classLabel", "chorustic download GunPoint"),
    ),
    Fault(
        "D09",
        "a test label the training split lacks (header declares it)",
        generated("MyUnseen", ["a", "b"] * 3, ["a", "c"], ["a", "b", "c"]),
        _preprocess("MyUnseen"),
        1,
        ("MyUnseen_TEST.ts", "'c'", "training split does not have"),
    ),
    # case 3: truncated or inconsistent data
    Fault(
        "D10",
        "TEST cut at a line boundary (60 of 150 series)",
        truncate_test_at_line("GunPoint", 60),
        _preprocess("GunPoint"),
        1,
        (
            "GunPoint",
            "60 test series in the files, 150 in the archive",
            "chorustic download GunPoint",
            "allow_modified_data",
        ),
    ),
    Fault(
        "D11",
        "the same truncated TEST, accepted on purpose (own variant): loads, difference recorded",
        truncate_test_at_line("GunPoint", 60),
        _preprocess("GunPoint", "--allow-modified-data"),
        0,
        ("modified data (allowed, recorded)",),
        modification_recorded("GunPoint", "60 test series"),
    ),
    Fault(
        "D12",
        "TEST cut in the middle of a line",
        truncate_test_mid_line("GunPoint"),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TEST.ts", "cannot parse", "truncated"),
    ),
    Fault(
        "D13",
        "@seriesLength disagrees with the data",
        edit_header("GunPoint", "@seriesLength 150", "@seriesLength 140"),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TEST.ts", "@seriesLength 140", "length 150"),
    ),
    Fault(
        "D14",
        "@dimensions disagrees with the data",
        edit_header("BasicMotions", "@dimensions 6", "@dimensions 5"),
        _preprocess("BasicMotions"),
        1,
        ("BasicMotions_TEST.ts", "@dimensions 5", "6 channel"),
    ),
    Fault(
        "D15",
        "TRAIN and TEST swapped",
        swap_splits("GunPoint"),
        _preprocess("GunPoint"),
        1,
        ("150 training series in the files, 50 in the archive",),
    ),
    Fault(
        "D16",
        "TEST of another dataset (other channels)",
        other_datasets_test("GunPoint", "BasicMotions"),
        _preprocess("GunPoint"),
        1,
        ("GunPoint",),
    ),
    Fault(
        "D17",
        "random bytes instead of a .ts file",
        replace_file("GunPoint", "TRAIN", os.urandom(3000)),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TRAIN.ts",),
    ),
    Fault(
        "D18",
        "an empty TEST file",
        replace_file("GunPoint", "TEST", b""),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TEST.ts",),
    ),
    Fault(
        "D19",
        "a UTF-16 encoded file",
        replace_file(
            "GunPoint", "TEST", (AEON / "GunPoint" / "GunPoint_TEST.ts").read_text().encode("utf-16")
        ),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TEST.ts",),
    ),
    Fault(
        "D20",
        "a file edited after its checksum was pinned",
        edited_after_pinning("GunPoint"),
        _preprocess("GunPoint"),
        1,
        ("checksum mismatch", "GunPoint_TEST.ts", "--update-lock"),
        file_untouched_and_lock_kept("GunPoint"),
    ),
    Fault(
        "D27",
        "values edited, sizes kept, in a copy of a dataset inside aeon (never pinned)",
        values_edited("GunPoint"),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TEST.ts differs in content from the official file", "2 of 150 series differ",
         "the aeon", "chorustic download GunPoint", "allow_modified_data"),
        edit_kept("GunPoint"),
    ),
    Fault(
        "D28",
        "the same edit accepted on purpose (own variant): loads, the content difference recorded",
        values_edited("GunPoint"),
        _preprocess("GunPoint", "--allow-modified-data"),
        0,
        ("modified data (allowed, recorded)",),
        modification_recorded("GunPoint", "GunPoint_TEST.ts differs in content from the official file"),
    ),
    Fault(
        "D29",
        "@missing true switched on with '?' values, sizes kept",
        missing_values_switched_on("GunPoint"),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TRAIN.ts differs in content", "header @missing 'true' where the official file has 'false'",
         "2 of 50 series differ", "allow_modified_data"),
    ),
    Fault(
        "D30",
        "a pinned official copy edited and the edit accepted with --update-lock: still not the official file",
        edited_after_pinning_then_accepted("GunPoint"),
        _preprocess("GunPoint"),
        1,
        ("GunPoint_TEST.ts differs in content from the official file", "allow_modified_data"),
        official_record_kept("GunPoint"),
    ),
    Fault(
        "D24",
        "TEST cut inside the last line's label (10 -> 1: still parses)",
        cut_last_label("PickupGestureWiimoteZ"),
        _preprocess("PickupGestureWiimoteZ"),
        1,
        ("does not end with a line break", "cut off"),
    ),
    Fault(
        "D25",
        "a series without a class label",
        relabel_one_test_series("GunPoint", ""),
        _preprocess("GunPoint"),
        1,
        ("has no class label",),
    ),
    Fault(
        "D26",
        "a cached array damaged (one flipped byte)",
        damaged_cache("GunPoint"),
        _preprocess("GunPoint"),
        0,
        ("GunPoint",),
        same_arrays_as_fresh("GunPoint"),
    ),  # a warning in the log; the cache is rebuilt
    Fault(
        "D21",
        "Windows line endings (not a fault: the same arrays)",
        crlf_and_lf("GunPoint"),
        _preprocess("GunPoint"),
        0,
        ("GunPoint",),
        same_arrays_as_lf("GunPoint"),
    ),
    Fault(
        "D31",
        "trailing spaces on every line, as an editor may save them (not a fault: the same lines)",
        white_space_added("GunPoint"),
        _preprocess("GunPoint"),
        0,
        ("GunPoint",),
        nothing_recorded("GunPoint"),
    ),
    Fault(
        "D32",
        "another official copy of the release: other comments and header fields, numbers with more digits",
        another_official_layout("ArrowHead"),
        _preprocess("ArrowHead"),
        0,
        ("ArrowHead",),
        nothing_recorded("ArrowHead"),
    ),
    Fault(
        "D33",
        "a UCR dataset filed under the UEA folder: the user's copy is used (with a note), not aeon's",
        filed_under("GunPoint", "UEA"),
        _preprocess("GunPoint"),
        0,
        ("GunPoint is a UCR dataset but was found under", "UEA/GunPoint"),
        used_in_place("GunPoint", "UEA"),
    ),
    Fault(
        "D34",
        "two different copies of one dataset (UCR/ and UEA/): neither is chosen",
        filed_under("GunPoint", "UCR", second="UEA"),
        _preprocess("GunPoint"),
        1,
        ("UCR/GunPoint", "UEA/GunPoint", "hold different copies", "move one of the two folders"),
    ),
    Fault(
        "D22", "a misspelled dataset name", nothing, _preprocess("GunPont"), 2, ("Did you mean 'GunPoint'",)
    ),
    Fault(
        "D23",
        "a misspelled dataset name to download",
        nothing,
        _download("BasicMotion"),
        2,
        ("Did you mean 'BasicMotions'",),
    ),
]


@pytest.mark.parametrize("f", FAULTS, ids=[f.id for f in FAULTS])
def test_data_fault(f: Fault, tmp_path, capsys, caplog, monkeypatch):
    f.inject(tmp_path)
    if f.patch is not None:
        f.patch(monkeypatch, tmp_path)
    try:
        rc = main([a.format(root=tmp_path) for a in f.argv])
    finally:
        monkeypatch.undo()
        if (tmp_path / "raw").exists():
            os.chmod(tmp_path / "raw", 0o755)
    out = capsys.readouterr()
    text = out.out + out.err + caplog.text  # warnings go to stderr through logging (pytest captures them)
    assert rc == f.exit, f"{f.id} {f.fault}: exit {rc}, expected {f.exit}\n{text}"
    for fragment in f.says:
        assert fragment in text, f"{f.id} {f.fault}: the message lacks {fragment!r}:\n{text}"
    assert "Traceback" not in text, f"{f.id}: a user-facing failure printed a traceback:\n{text}"
    if f.check is not None:
        f.check(tmp_path)


def test_entry_point_exit_status_and_one_line(tmp_path):
    """The installed `chorustic` command: a user error is one line on stderr, exit 2, no traceback."""
    import subprocess
    import sys

    exe = Path(sys.executable).parent / "chorustic"
    proc = subprocess.run(
        [str(exe), "preprocess", "--datasets", "GunPont", "--cache-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Did you mean 'GunPoint'" in proc.stderr
