"""The real downloader against a local HTTP server on 127.0.0.1 with switchable misbehaviour."""

from __future__ import annotations

import hashlib
import io
import json
import socket
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from chorustic.cli import main
from chorustic.data import download as dl
from chorustic.data.download import Mirror, download_archive, ensure_dataset, find_local
from chorustic.data.errors import (
    ChecksumMismatchError,
    CorruptArchiveError,
    DataDownloadError,
    DataError,
    DatasetNotAvailableError,
    DownloadHTTPError,
    DownloadTimeoutError,
    MissingSplitError,
    ModifiedDataError,
    PartialDownloadError,
    UnknownDatasetError,
)
from chorustic.data.loading import load_dataset
from chorustic.data.lock import LOCK_NAME, DataLock
from chorustic.data.registry import SubsetSpec

FAST = dict(progress=False, retries=2, backoff=0.0, timeout=5.0)


# --------------------------------------------------------------------------------- the server
class _State:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.json: dict[str, object] = {}
        self.drop_once: set[str] = set()  # first GET: full Content-Length, half the body, then hang up
        self.ignore_range = False
        self.delay: dict[str, float] = {}
        self.status: dict[str, int] = {}
        self.log: list[tuple[str, str | None]] = []
        self.lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    def do_GET(self) -> None:  # noqa: N802
        st: _State = self.server.state  # type: ignore[attr-defined]
        path = urlsplit(self.path).path
        rng = self.headers.get("Range")
        with st.lock:
            st.log.append((path, rng))
            drop = path in st.drop_once
            st.drop_once.discard(path)
        if path in st.delay:
            time.sleep(st.delay[path])
        if path in st.status:
            self._plain(st.status[path], b"error")
            return
        if path in st.json:
            self._plain(200, json.dumps(st.json[path]).encode(), "application/json")
            return
        if path not in st.files:
            self._plain(404, b"<html>not found</html>", "text/html")
            return
        body = st.files[path]
        etag = '"' + hashlib.md5(body).hexdigest() + '"'
        start = 0
        if rng and rng.startswith("bytes=") and not st.ignore_range:
            start = int(rng[6:].split("-")[0])
            if start >= len(body):
                self._plain(416, b"")
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        payload = body[start:]
        self.send_header("Content-Type", "application/zip")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if drop:
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(payload)

    def _plain(self, status: int, body: bytes, ctype: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server:
    def __init__(self) -> None:
        self.state = _State()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.httpd.state = self.state  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def tsc(self) -> str:
        return self.url + "/tsc"

    def requests(self, path: str | None = None) -> list[tuple[str, str | None]]:
        return [r for r in self.state.log if path is None or r[0] == path]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


# ------------------------------------------------------------------------------ test data
def ts_bytes(
    name: str,
    n: int,
    length: int = 40,
    *,
    channels: int = 1,
    classes=("1", "2"),
    seed: int = 0,
    variable: bool = False,
) -> bytes:
    rng = np.random.default_rng(seed)
    lines = [
        f"@problemName {name}",
        "@timeStamps false",
        "@missing false",
        f"@univariate {str(channels == 1).lower()}",
    ]
    if channels > 1:
        lines.append(f"@dimensions {channels}")
    lines += [f"@equalLength {str(not variable).lower()}"]
    if not variable:
        lines.append(f"@seriesLength {length}")
    lines += [f"@classLabel true {' '.join(classes)}", "@data"]
    for i in range(n):
        L = int(rng.integers(length // 2, length + 1)) if variable else length
        chans = [",".join(f"{v:.6f}" for v in rng.normal(size=L)) for _ in range(channels)]
        lines.append(":".join(chans) + f":{classes[i % len(classes)]}")
    return ("\n".join(lines) + "\n").encode()


def make_zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    return buf.getvalue()


def dataset_zip(
    name: str, *, seed: int = 0, with_test: bool = True, n: int = 30, prefix: str = "", pad: int = 0
) -> bytes:
    m = {
        f"{prefix}{name}_TRAIN.ts": ts_bytes(name, n, seed=seed),
        f"{prefix}{name}_TRAIN.arff": b"@relation ignored",
    }
    if pad:  # incompressible filler, so that a transfer cut in half has delivered whole chunks
        m[f"{prefix}padding.bin"] = np.random.default_rng(seed).bytes(pad)
    if with_test:
        m[f"{prefix}{name}_TEST.ts"] = ts_bytes(name, n + 3, seed=seed + 1)
    return make_zip(m)


def serve_dataset(server: Server, name: str, **kw) -> bytes:
    data = dataset_zip(name, **kw)
    server.state.files[f"/tsc/{name}.zip"] = data
    return data


def zip_member(data: bytes, member: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return zf.read(member)


def lock_of(data_dir: Path) -> dict:
    return json.loads((data_dir / LOCK_NAME).read_text())


# ---------------------------------------------------------------------------------- scenarios
def test_clean_download_then_verified_local_copy(server, tmp_path):
    data = serve_dataset(server, "Beef")
    folder = ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    assert folder == tmp_path / "Beef"
    assert sorted(p.name for p in folder.iterdir()) == ["Beef_TEST.ts", "Beef_TRAIN.ts"]  # only the .ts files
    assert (folder / "Beef_TRAIN.ts").read_bytes() == zip_member(data, "Beef_TRAIN.ts")
    lock = lock_of(tmp_path)
    entry = lock["datasets"]["Beef"]
    assert entry["source"] == "download" and entry["url"] == f"{server.tsc}/Beef.zip"
    assert entry["files"]["Beef_TEST.ts"] == hashlib.sha256(zip_member(data, "Beef_TEST.ts")).hexdigest()
    assert lock["archives"][f"{server.tsc}/Beef.zip"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert not list((tmp_path / ".chorustic" / "downloads").glob("*"))  # zip removed after extraction
    n = len(server.requests())
    assert ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST) == folder
    assert len(server.requests()) == n  # second run: local copy, no request
    # a kept archive is reused instead of fetched again
    import shutil

    shutil.rmtree(folder)
    ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], keep_archives=True, **FAST)
    kept = dl.download_path(tmp_path, f"{server.tsc}/Beef.zip", "Beef.zip")
    assert kept.read_bytes() == data and len(server.requests()) == n + 1
    shutil.rmtree(folder)
    ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    assert len(server.requests()) == n + 1 and not kept.exists()
    # the served data are synthetic (2 classes, length 40), not the real Beef: a modified variant
    with pytest.raises(ModifiedDataError, match="5 in the archive"):
        load_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    ds = load_dataset("Beef", tmp_path, mirrors=[server.tsc], allow_modified=True, **FAST)
    assert ds.X_train.shape == (30, 1, 512) and ds.classes.tolist() == ["1", "2"]
    assert any("2 classes in the files, 5 in the archive" in m for m in ds.modifications)


def test_content_compared_with_the_downloaded_file(server, tmp_path):
    """An edit that keeps every size, even once accepted into the lock with --update-lock, is not the
    downloaded (official) file: refused by default, recorded with allow_modified, naming the download.
    Line endings alone are not a difference; the official bytes back are official again."""
    serve_dataset(server, "Beef")
    folder = ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    pinned = lock_of(tmp_path)["datasets"]["Beef"]
    assert pinned["source"] == "download" and pinned["content"] == pinned["files"]  # LF files

    def content_lines(**kw) -> list[str]:
        ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], update_lock=True, **FAST)
        ds = load_dataset("Beef", tmp_path, mirrors=[server.tsc], allow_modified=True, **kw, **FAST)
        return [m for m in ds.modifications if "differs in content" in m]

    p = folder / "Beef_TRAIN.ts"
    original = p.read_bytes()
    p.write_bytes(original.replace(b"\n", b"\r\n"))
    assert content_lines() == []
    p.write_bytes(original.replace(b"0.", b"1.", 3))  # three values changed, sizes kept
    (line,) = content_lines()
    assert "Beef_TRAIN.ts differs in content from the official file" in line and f"{server.tsc}/Beef.zip" in line
    entry = lock_of(tmp_path)["datasets"]["Beef"]
    assert entry["source"] == "local" and entry["official"]["files"] == pinned["files"] != entry["files"]
    with pytest.raises(ModifiedDataError, match="Beef_TRAIN.ts differs in content"):
        load_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    p.write_bytes(original)
    assert content_lines() == []


def test_interrupted_transfer_resumes_with_range(server, tmp_path):
    data = serve_dataset(server, "Beef", pad=600_000)
    server.state.drop_once.add("/tsc/Beef.zip")
    folder = ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    reqs = server.requests("/tsc/Beef.zip")
    assert len(reqs) == 2 and reqs[0][1] is None
    start = int(reqs[1][1].removeprefix("bytes=").removesuffix("-"))
    assert 0 < start <= len(data) // 2  # asked only for the rest of what had arrived
    assert (folder / "Beef_TEST.ts").read_bytes() == zip_member(data, "Beef_TEST.ts")


def test_resume_across_runs_and_server_ignoring_range(server, tmp_path):
    data = serve_dataset(server, "Coffee")
    url = f"{server.tsc}/Coffee.zip"
    dest = dl.download_path(tmp_path, url, "Coffee.zip")
    dest.parent.mkdir(parents=True)
    # a previous run was killed after 1000 bytes
    dest.with_name(dest.name + ".part").write_bytes(data[:1000])
    dest.with_name(dest.name + ".part.json").write_text(json.dumps({"url": url}))
    ensure_dataset("Coffee", tmp_path, mirrors=[server.tsc], **FAST)
    assert server.requests("/tsc/Coffee.zip") == [("/tsc/Coffee.zip", "bytes=1000-")]
    assert lock_of(tmp_path)["archives"][url]["sha256"] == hashlib.sha256(data).hexdigest()

    # a server that ignores Range answers 200 with the whole file: written from the start, not appended
    server.state.ignore_range = True
    server.state.drop_once.add("/tsc/Wine.zip")
    wine = serve_dataset(server, "Wine", seed=5, pad=600_000)
    folder = ensure_dataset("Wine", tmp_path, mirrors=[server.tsc], **FAST)
    reqs = server.requests("/tsc/Wine.zip")
    assert len(reqs) == 2 and reqs[1][1] is not None
    assert (folder / "Wine_TRAIN.ts").read_bytes() == zip_member(wine, "Wine_TRAIN.ts")


def test_not_a_zip_and_bad_crc_are_corrupt_archives(server, tmp_path):
    server.state.files["/tsc/Beef.zip"] = b"<!DOCTYPE html><html>Sorry, no such dataset</html>"
    with pytest.raises(CorruptArchiveError) as e:
        ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    msg = str(e.value)
    assert "Beef" in msg and f"{server.tsc}/Beef.zip" in msg and "HTML" in msg
    assert find_local("Beef", tmp_path) is None and not (tmp_path / "Beef").exists()
    assert not list((tmp_path / ".chorustic" / "downloads").glob("Beef*"))  # bad copy deleted

    good = bytearray(dataset_zip("Coffee"))
    member = zip_member(bytes(good), "Coffee_TEST.ts")
    # flip bytes inside the compressed data of a member: the zip opens, reading fails the CRC/inflate
    with zipfile.ZipFile(io.BytesIO(bytes(good))) as zf:
        info = zf.getinfo("Coffee_TEST.ts")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 10
    for i in range(start, start + 20):
        good[i] ^= 0xFF
    server.state.files["/tsc/Coffee.zip"] = bytes(good)
    with pytest.raises(CorruptArchiveError, match="Coffee"):
        ensure_dataset("Coffee", tmp_path, mirrors=[server.tsc], **FAST)
    assert not (tmp_path / "Coffee").exists() and member  # nothing half-extracted
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_checksum_mismatch_against_the_lock(server, tmp_path):
    serve_dataset(server, "Beef", seed=1)
    folder = ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    pinned = lock_of(tmp_path)["datasets"]["Beef"]["files"]["Beef_TRAIN.ts"]

    # a local file that changed since it was pinned
    (folder / "Beef_TRAIN.ts").write_bytes((folder / "Beef_TRAIN.ts").read_bytes() + b"\n")
    with pytest.raises(ChecksumMismatchError) as e:
        ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    err = e.value
    assert err.expected == pinned and err.found != pinned and err.file.endswith("Beef_TRAIN.ts")
    assert pinned in str(err) and "--update-lock" in str(err) and f"move {folder} away" in str(err)

    # the server now serves another version: the download is refused, nothing lands
    import shutil

    shutil.rmtree(folder)
    new = serve_dataset(server, "Beef", seed=2)
    with pytest.raises(ChecksumMismatchError) as e:
        ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    assert f"{server.tsc}/Beef.zip" in str(e.value) and not folder.exists()

    # --update-lock accepts it
    ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], update_lock=True, **FAST)
    entry = lock_of(tmp_path)["datasets"]["Beef"]
    assert entry["files"]["Beef_TRAIN.ts"] == hashlib.sha256(zip_member(new, "Beef_TRAIN.ts")).hexdigest()
    ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)  # and verifies from now on


def test_404(server, tmp_path):
    with pytest.raises(DownloadHTTPError) as e:
        ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    assert e.value.status == 404 and e.value.dataset == "Beef" and e.value.url == f"{server.tsc}/Beef.zip"
    assert "HTTP 404" in str(e.value) and f"{server.tsc}/Beef.zip" in str(e.value)
    assert len(server.requests("/tsc/Beef.zip")) == 1  # a 404 is not retried


def test_timeout(server, tmp_path):
    serve_dataset(server, "Beef")
    server.state.delay["/tsc/Beef.zip"] = 1.5
    t = time.perf_counter()
    with pytest.raises(DownloadTimeoutError) as e:
        ensure_dataset(
            "Beef", tmp_path, mirrors=[server.tsc], progress=False, retries=1, backoff=0.0, timeout=0.3
        )
    assert time.perf_counter() - t < 1.5
    assert (
        "timed out" in str(e.value) and f"{server.tsc}/Beef.zip" in str(e.value) and "'Beef'" in str(e.value)
    )
    assert len(server.requests("/tsc/Beef.zip")) == 2  # retried once


def test_server_errors_are_retried_with_backoff(server, tmp_path, monkeypatch):
    serve_dataset(server, "Beef")
    server.state.status["/tsc/Beef.zip"] = 503
    sleeps = []
    monkeypatch.setattr(dl._http.time, "sleep", lambda s: sleeps.append(s))
    with pytest.raises(DataDownloadError, match="after 4 attempts"):
        ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], progress=False, retries=3, backoff=0.5)
    assert sleeps == [0.5, 1.0, 2.0]  # exponential backoff


def test_zip_without_test_file(server, tmp_path):
    serve_dataset(server, "Beef", with_test=False)
    with pytest.raises(MissingSplitError) as e:
        ensure_dataset("Beef", tmp_path, mirrors=[server.tsc], **FAST)
    assert "Beef_TEST.ts" in str(e.value) and f"{server.tsc}/Beef.zip" in str(e.value)
    assert "Beef_TRAIN.ts" in str(e.value)  # lists what the zip does contain
    assert not (tmp_path / "Beef").exists()


def test_unknown_name_never_reaches_the_network(server, tmp_path):
    with pytest.raises(UnknownDatasetError, match="'Beef'"):
        ensure_dataset("Beeef", tmp_path, mirrors=[server.tsc], **FAST)
    assert server.requests() == []
    # a user error: exit status 2 (one message, nothing attempted)
    assert (
        main(["download", "--datasets", "Beeef", "--data-dir", str(tmp_path), "--mirror", server.tsc, "--no-progress"]) == 2
    )
    assert server.requests() == []


def test_offline_and_aeon_wheel(server, tmp_path):
    with pytest.raises(DatasetNotAvailableError, match="offline"):
        ensure_dataset("Beef", tmp_path, offline=True, **FAST)
    folder = ensure_dataset("GunPoint", tmp_path, mirrors=[server.tsc], offline=True, **FAST)
    wheel = dl.aeon_data_dir() / "GunPoint"
    assert (folder / "GunPoint_TEST.ts").read_bytes() == (wheel / "GunPoint_TEST.ts").read_bytes()
    assert lock_of(tmp_path)["datasets"]["GunPoint"]["source"] == "aeon" and server.requests() == []


def test_nested_archive_layout_is_a_local_copy(server, tmp_path):
    for sub in ("UCR", "Univariate_ts"):
        root = tmp_path / sub
        (root / "Beef").mkdir(parents=True)
        (root / "Beef" / "Beef_TRAIN.ts").write_bytes(ts_bytes("Beef", 4))
        (root / "Beef" / "Beef_TEST.ts").write_bytes(ts_bytes("Beef", 4, seed=3))
        assert ensure_dataset("Beef", tmp_path, offline=True, lock=False, **FAST) == root / "Beef"
        import shutil

        shutil.rmtree(root)
    (tmp_path / "UEA" / "Beef").mkdir(parents=True)  # a UCR name under UEA/ is not a match
    assert find_local("Beef", tmp_path) is None


def test_zenodo_fallback_with_md5(server, tmp_path):
    from aeon.datasets.tsc_datasets import tsc_zenodo

    rid = tsc_zenodo["Beef"]
    train, test = ts_bytes("Beef", 10), ts_bytes("Beef", 12, seed=9)
    base = server.url + "/zen"
    files = []
    for key, body in (("Beef_TRAIN.ts", train), ("Beef_TEST.ts", test), ("Beef_TRAIN.arff", b"x")):
        path = f"/zen/api/records/{rid}/files/{key}/content"
        server.state.files[path] = body
        files.append(
            {
                "key": key,
                "size": len(body),
                "checksum": "md5:" + hashlib.md5(body).hexdigest(),
                "links": {"self": server.url + path},
            }
        )
    server.state.json[f"/zen/api/records/{rid}"] = {"id": rid, "files": files}
    folder = ensure_dataset("Beef", tmp_path, mirrors=[server.tsc, "zenodo+" + base], **FAST)
    assert (folder / "Beef_TRAIN.ts").read_bytes() == train and (folder / "Beef_TEST.ts").read_bytes() == test
    assert server.requests("/tsc/Beef.zip")  # the primary mirror was tried first (404)
    assert lock_of(tmp_path)["datasets"]["Beef"]["url"] == f"{base}/api/records/{rid}"

    # a corrupted transfer is caught by Zenodo's md5
    import shutil

    shutil.rmtree(folder)
    (tmp_path / LOCK_NAME).unlink()
    server.state.files[f"/zen/api/records/{rid}/files/Beef_TEST.ts/content"] = test[:-5] + b"00000"
    with pytest.raises(DataDownloadError) as e:
        ensure_dataset("Beef", tmp_path, mirrors=[server.tsc, "zenodo+" + base], **FAST)
    msg = str(e.value)
    assert "all 2 mirrors failed" in msg and "HTTP 404" in msg and "md5" in msg  # every mirror's reason


def test_download_archive_with_per_dataset_fallback(server, tmp_path):
    members = {}
    for name in ("Beef", "Coffee"):
        members[f"Univariate_ts/{name}/{name}_TRAIN.ts"] = ts_bytes(name, 6)
        members[f"Univariate_ts/{name}/{name}_TEST.ts"] = ts_bytes(name, 7, seed=1)
    archive = make_zip(members)
    server.state.files["/tsc/Archives/Univariate2018_ts.zip"] = archive
    serve_dataset(server, "Wine")  # not in the archive zip: per-dataset download
    got = download_archive(
        "UCR",
        tmp_path,
        names=["Beef", "Coffee", "Wine", "GunPoint"],
        mirrors=[server.tsc],
        use_archive_zip=True,
        **FAST,
    )
    assert got == [tmp_path / n for n in ("Beef", "Coffee", "Wine", "GunPoint")]
    assert (tmp_path / "Coffee" / "Coffee_TEST.ts").read_bytes() == members[
        "Univariate_ts/Coffee/Coffee_TEST.ts"
    ]
    lock = lock_of(tmp_path)
    assert lock["archives"][f"{server.tsc}/Archives/Univariate2018_ts.zip"]["datasets"] == ["Beef", "Coffee"]
    assert lock["datasets"]["GunPoint"]["source"] == "aeon"
    n = len(server.requests())
    download_archive("UCR", tmp_path, names=["Beef", "Coffee", "Wine"], mirrors=[server.tsc], **FAST)
    assert len(server.requests()) == n  # everything present: no transfer

    # one failing dataset does not stop the others
    n = len(server.requests())
    with pytest.raises(PartialDownloadError) as e:
        download_archive("UCR", tmp_path, names=["Beef", "Meat"], mirrors=[server.tsc], **FAST)
    assert set(e.value.succeeded) == {"Beef"} and set(e.value.failures) == {"Meat"}
    assert isinstance(e.value.failures["Meat"], DownloadHTTPError)
    assert server.requests()[n:] == [("/tsc/Meat.zip", None)]  # one missing: no whole-archive transfer


def test_insectwingbeat_subset_from_downloaded_source(server, tmp_path):
    classes = tuple(f"c{i}" for i in range(10))
    server.state.files["/tsc/InsectWingbeat.zip"] = make_zip(
        {
            "InsectWingbeat_TRAIN.ts": ts_bytes(
                "InsectWingbeat", 60, 12, channels=3, classes=classes, variable=True
            ),
            "InsectWingbeat_TEST.ts": ts_bytes(
                "InsectWingbeat", 40, 12, channels=3, classes=classes, seed=4, variable=True
            ),
        }
    )
    spec = SubsetSpec("InsectWingbeatSubset", "InsectWingbeat", n_train=20, n_test=10, seed=0)
    folder = ensure_dataset("InsectWingbeatSubset", tmp_path, mirrors=[server.tsc], subset=spec, **FAST)
    assert folder == tmp_path / "InsectWingbeatSubset" and (tmp_path / "InsectWingbeat").is_dir()
    ds = load_dataset("InsectWingbeatSubset", tmp_path, mirrors=[server.tsc], **FAST)
    assert ds.X_train.shape == (20, 3, 512) and ds.X_test.shape == (10, 3, 512) and ds.n_classes == 10
    assert np.bincount(ds.y_train).tolist() == [2] * 10  # class-stratified
    entry = lock_of(tmp_path)["datasets"]["InsectWingbeatSubset"]
    assert entry["source"] == "derived" and entry["params"]["n_train"] == 20
    # another size rebuilds the folder; the lock then refuses it unless updated
    bigger = SubsetSpec("InsectWingbeatSubset", "InsectWingbeat", n_train=30, n_test=10, seed=0)
    with pytest.raises(ChecksumMismatchError):
        ensure_dataset("InsectWingbeatSubset", tmp_path, mirrors=[server.tsc], subset=bigger, **FAST)
    ensure_dataset(
        "InsectWingbeatSubset", tmp_path, mirrors=[server.tsc], subset=bigger, update_lock=True, **FAST
    )
    assert load_dataset("InsectWingbeatSubset", tmp_path, **FAST).n_train == 30


def test_download_command(server, tmp_path, capsys):
    serve_dataset(server, "Beef")
    rc = main(
        [
            "download",
            "Beef",
            "Meat",
            "GunPoint",
            "--data-dir",
            str(tmp_path),
            "--mirror",
            server.tsc,
            "--no-progress",
            "--retries",
            "0",
        ]
    )
    out = capsys.readouterr()
    assert rc == 1  # Meat is missing on the server
    assert (tmp_path / "Beef" / "Beef_TRAIN.ts").is_file() and (tmp_path / "GunPoint").is_dir()
    assert "Meat: FAILED" in out.err and "HTTP 404" in out.err and f"{server.tsc}/Meat.zip" in out.err
    assert main(["download", "--datasets", "Beef", "--data-dir", str(tmp_path), "--offline", "--no-progress"]) == 0
    assert main(["download", "--data-dir", str(tmp_path)]) == 2  # nothing asked


def test_mirror_parsing_and_env(monkeypatch):
    assert Mirror.parse("https://x.org/a/") == Mirror("https://x.org/a", "tsc")
    assert Mirror.parse("zenodo+http://127.0.0.1:9") == Mirror("http://127.0.0.1:9", "zenodo")
    with pytest.raises(ValueError):
        Mirror.parse("ftp://nope")
    monkeypatch.setenv("CHORUSTIC_DATA_URL", "http://127.0.0.1:1/tsc")
    monkeypatch.setenv("CHORUSTIC_ZENODO_URL", "http://127.0.0.1:1/zen")
    assert [str(m) for m in dl.default_mirrors()] == [
        "http://127.0.0.1:1/tsc",
        "zenodo+http://127.0.0.1:1/zen",
    ]
    monkeypatch.delenv("CHORUSTIC_DATA_URL")
    monkeypatch.delenv("CHORUSTIC_ZENODO_URL")
    assert dl.default_mirrors()[0].url == "https://www.timeseriesclassification.com/aeon-toolkit"


def test_env_var_points_the_default_mirror_at_the_server(server, tmp_path, monkeypatch):
    serve_dataset(server, "Beef")
    monkeypatch.setenv("CHORUSTIC_DATA_URL", server.tsc)
    monkeypatch.setenv("CHORUSTIC_ZENODO_URL", server.url + "/zen")
    assert ensure_dataset("Beef", tmp_path, **FAST) == tmp_path / "Beef"


def test_parallel_lock_updates_are_not_lost(tmp_path):
    lock = DataLock(tmp_path / LOCK_NAME)

    def rec(i: int) -> None:
        lock.record_dataset(f"D{i}", {f"D{i}_TRAIN.ts": f"{i:064x}"}, source="local")

    threads = [threading.Thread(target=rec, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(lock_of(tmp_path)["datasets"]) == sorted(f"D{i}" for i in range(16))


def test_errors_share_one_hierarchy():
    for cls in (
        DownloadHTTPError,
        DownloadTimeoutError,
        CorruptArchiveError,
        MissingSplitError,
        ChecksumMismatchError,
        DatasetNotAvailableError,
        PartialDownloadError,
    ):
        assert issubclass(cls, DataDownloadError) and issubclass(cls, DataError)
    assert issubclass(UnknownDatasetError, DataError)


def test_uea_archive_provides_the_subset_source_and_cli_subset_options(server, tmp_path, capsys):
    classes = tuple(f"c{i}" for i in range(10))
    members = {
        "Multivariate_ts/InsectWingbeat/InsectWingbeat_TRAIN.ts": ts_bytes(
            "InsectWingbeat", 50, 10, channels=2, classes=classes, variable=True
        ),
        "Multivariate_ts/InsectWingbeat/InsectWingbeat_TEST.ts": ts_bytes(
            "InsectWingbeat", 50, 10, channels=2, classes=classes, seed=1, variable=True
        ),
        "Multivariate_ts/Libras/Libras_TRAIN.ts": ts_bytes("Libras", 6, channels=2),
        "Multivariate_ts/Libras/Libras_TEST.ts": ts_bytes("Libras", 6, channels=2, seed=2),
    }
    server.state.files["/tsc/Archives/Multivariate2018_ts.zip"] = make_zip(members)
    spec = SubsetSpec("InsectWingbeatSubset", "InsectWingbeat", n_train=10, n_test=20, seed=3)
    got = download_archive(
        "UEA",
        tmp_path,
        names=["InsectWingbeatSubset", "Libras", "BasicMotions"],
        mirrors=[server.tsc],
        subset=spec,
        use_archive_zip=True,
        **FAST,
    )
    assert [p.name for p in got] == ["InsectWingbeatSubset", "Libras", "BasicMotions"]
    assert len(server.requests()) == 1  # one archive transfer for everything
    assert (tmp_path / "InsectWingbeat" / "InsectWingbeat_TRAIN.ts").is_file()
    rows = json.loads((got[0] / "subset.json").read_text())["rows"]
    assert (len(rows["TRAIN"]), len(rows["TEST"])) == (10, 20)

    rc = main(
        [
            "download",
            "InsectWingbeatSubset",
            "--data-dir",
            str(tmp_path),
            "--offline",
            "--no-progress",
            "--subset-train",
            "30",
            "--subset-test",
            "20",
            "--subset-seed",
            "4",
            "--update-lock",
        ]
    )
    assert rc == 0
    manifest = json.loads((got[0] / "subset.json").read_text())
    assert manifest["params"] == {**spec.params(), "n_train": 30, "seed": 4}
    # more rows than the source has: a clear error, not a traceback
    rc = main(
        [
            "download",
            "InsectWingbeatSubset",
            "--data-dir",
            str(tmp_path),
            "--offline",
            "--no-progress",
            "--subset-train",
            "51",
        ]
    )
    assert rc == 1 and "only 50" in capsys.readouterr().err
