"""HTTP transfers for the downloader: retries with exponential backoff, resumable downloads.

A transfer writes to ``<dest>.part`` (plus ``<dest>.part.json`` with the URL and the server's
validators). After an interruption (a dropped connection, a killed process) the next attempt, in
the same run or a later one, asks for the rest with ``Range: bytes=<size>-`` (and ``If-Range`` so a
changed remote file is fetched anew). A server that ignores ``Range`` and answers ``200`` gets
the whole file again, written from the start. Only a complete transfer is renamed to ``dest``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import requests
import urllib3

import chorustic
from chorustic.data.errors import DataDownloadError, DownloadHTTPError, DownloadTimeoutError

__all__ = ["TransferPolicy", "fetch", "get_json", "make_session", "USER_AGENT"]

USER_AGENT = f"chorustic/{chorustic.__version__} (dataset downloader; python-requests)"
_CHUNK = 1 << 16


@dataclass(frozen=True)
class TransferPolicy:
    """How hard to try: ``retries`` extra attempts per URL, waiting ``backoff * 2**k`` seconds
    before retry ``k+1``; ``timeout`` seconds for connecting and for each read."""

    retries: int = 3
    backoff: float = 1.0
    timeout: float = 60.0
    progress: bool = True

    def delay(self, attempt: int) -> float:
        return self.backoff * (2**attempt)


class _Retryable(Exception):
    """A transient failure worth another attempt."""

    def __init__(self, message: str, *, timeout: bool = False):
        super().__init__(message)
        self.timeout = timeout


def make_session() -> requests.Session:
    s = requests.Session()
    s.headers["User-Agent"] = USER_AGENT
    return s


def _is_timeout(exc: BaseException) -> bool:
    """requests reports a read timeout inside a streamed body as a ConnectionError: look inside."""
    seen = set()
    stack: list[Any] = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, (requests.Timeout, socket.timeout, TimeoutError)):
            return True
        name = type(e).__name__
        if "Timeout" in name:
            return True
        if isinstance(e, BaseException):
            stack.extend([e.__cause__, e.__context__])
            stack.extend(a for a in getattr(e, "args", ()) if isinstance(a, BaseException))
            reason = getattr(e, "reason", None)
            if isinstance(reason, BaseException):
                stack.append(reason)
    return False


def _http_error(status: int, url: str, dataset: str | None) -> DownloadHTTPError:
    what = f"dataset {dataset!r}" if dataset else "the download"
    if status in (404, 410):
        hint = (
            "the file does not exist on this server: check the dataset name (`chorustic datasets`) "
            "and the mirror URL (--mirror / CHORUSTIC_DATA_URL)"
        )
    elif status in (401, 403):
        hint = "the server refused access; try another mirror (--mirror) or later"
    else:
        hint = "the server failed; try again later or use another mirror (--mirror)"
    return DownloadHTTPError(
        f"HTTP {status} for {what} from {url}: {hint}.", dataset=dataset, url=url, status=status
    )


def _request(
    session: requests.Session,
    url: str,
    policy: TransferPolicy,
    dataset: str | None,
    headers: dict[str, str] | None = None,
) -> requests.Response:
    """One GET; maps transport errors to _Retryable, hard HTTP errors to DownloadHTTPError."""
    try:
        resp = session.get(
            url,
            stream=True,
            timeout=(policy.timeout, policy.timeout),
            headers=headers or {},
            allow_redirects=True,
        )
    except requests.RequestException as exc:
        raise _Retryable(f"{type(exc).__name__}: {exc}", timeout=_is_timeout(exc)) from exc
    if resp.status_code in (408, 429) or resp.status_code >= 500:
        resp.close()
        raise _Retryable(f"HTTP {resp.status_code}")
    if resp.status_code >= 400 and resp.status_code != 416:
        resp.close()
        raise _http_error(resp.status_code, url, dataset)
    return resp


def _with_retries(
    fn: Callable[[int], Any],
    url: str,
    policy: TransferPolicy,
    dataset: str | None,
    sleep: Callable[[float], None] | None = None,
) -> Any:
    sleep = sleep or time.sleep
    last: _Retryable | None = None
    for attempt in range(policy.retries + 1):
        if attempt:
            sleep(policy.delay(attempt - 1))
        try:
            return fn(attempt)
        except _Retryable as exc:
            last = exc
    assert last is not None
    what = f"dataset {dataset!r}" if dataset else "the download"
    tries = f"{policy.retries + 1} attempt{'s' if policy.retries else ''}"
    if last.timeout:
        raise DownloadTimeoutError(
            f"timed out fetching {what} from {url} after {tries} (timeout {policy.timeout:g} s per read): "
            "the server is slow or unreachable; try again later, raise --timeout, or use another mirror (--mirror).",
            dataset=dataset,
            url=url,
        )
    raise DataDownloadError(
        f"could not fetch {what} from {url} after {tries}: {last}. Check the network and try again "
        "(a partial download is kept and resumed), or use another mirror (--mirror).",
        dataset=dataset,
        url=url,
    )


def get_json(session: requests.Session, url: str, policy: TransferPolicy, dataset: str | None = None) -> Any:
    def once(_attempt: int) -> Any:
        resp = _request(session, url, policy, dataset, headers={"Accept": "application/json"})
        try:
            if resp.status_code != 200:
                raise _Retryable(f"HTTP {resp.status_code}")
            try:
                body = resp.content
            except requests.RequestException as exc:
                raise _Retryable(f"{type(exc).__name__}: {exc}", timeout=_is_timeout(exc)) from exc
        finally:
            resp.close()
        try:
            return json.loads(body)
        except ValueError as exc:
            raise DataDownloadError(
                f"{url} did not return JSON for {('dataset ' + repr(dataset)) if dataset else 'the request'} "
                f"({exc}); the mirror URL is probably wrong.",
                dataset=dataset,
                url=url,
            ) from exc

    return _with_retries(once, url, policy, dataset)


@dataclass(frozen=True)
class FetchResult:
    path: Path
    sha256: str
    size: int
    resumed: bool


def _parse_content_range(value: str | None) -> tuple[int, int | None] | None:
    # "bytes 100-199/1000" or "bytes 100-199/*"
    if not value or not value.startswith("bytes "):
        return None
    try:
        span, total = value[6:].split("/")
        start = int(span.split("-")[0])
        return start, (None if total.strip() == "*" else int(total))
    except ValueError:
        return None


def fetch(
    url: str,
    dest: str | os.PathLike,
    *,
    session: requests.Session | None = None,
    policy: TransferPolicy = TransferPolicy(),
    dataset: str | None = None,
    sleep: Callable[[float], None] | None = None,
) -> FetchResult:
    """Download ``url`` to ``dest`` (resuming ``dest.part``), returning its SHA-256 and size."""
    from tqdm.auto import tqdm

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    meta_path = dest.with_name(dest.name + ".part.json")
    session = session or make_session()
    resumed = False

    def load_meta() -> dict[str, Any]:
        try:
            return json.loads(meta_path.read_text())
        except (OSError, ValueError):
            return {}

    def reset() -> None:
        for p in (part, meta_path):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()

    def once(attempt: int) -> int:
        nonlocal resumed
        meta = load_meta()
        if part.exists() and meta.get("url") != url:
            reset()  # a leftover of another URL
            meta = {}
        offset = part.stat().st_size if part.exists() else 0
        headers: dict[str, str] = {}
        if offset:
            headers["Range"] = f"bytes={offset}-"
            validator = meta.get("etag") or meta.get("last_modified")
            if validator:
                headers["If-Range"] = validator
        resp = _request(session, url, policy, dataset, headers=headers)
        try:
            if resp.status_code == 416:  # our part is complete or bogus: start over
                reset()
                raise _Retryable("HTTP 416 (range not satisfiable); restarting from scratch")
            total: int | None
            if resp.status_code == 206 and offset:
                cr = _parse_content_range(resp.headers.get("Content-Range"))
                if cr is None or cr[0] != offset:
                    reset()
                    raise _Retryable(
                        f"unexpected Content-Range {resp.headers.get('Content-Range')!r}; restarting"
                    )
                total = cr[1]
                mode = "ab"
                resumed = True
            else:
                # 200: a fresh transfer, or a server that ignores Range -> rewrite from the start
                offset = 0
                clen = resp.headers.get("Content-Length")
                total = int(clen) if clen and clen.isdigit() else None
                mode = "wb"
                meta = {
                    "url": url,
                    "etag": resp.headers.get("ETag"),
                    "last_modified": resp.headers.get("Last-Modified"),
                    "total": total,
                }
                meta_path.write_text(json.dumps(meta))
            written = offset
            with (
                open(part, mode) as fh,
                tqdm(
                    total=total,
                    initial=offset,
                    unit="B",
                    unit_scale=True,
                    unit_divisor=1024,
                    desc=dest.name,
                    disable=None if policy.progress else True,
                    leave=False,
                ) as bar,
            ):
                try:
                    for chunk in resp.iter_content(_CHUNK):
                        if chunk:
                            fh.write(chunk)
                            written += len(chunk)
                            bar.update(len(chunk))
                except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
                    raise _Retryable(
                        f"transfer interrupted at {written} bytes ({type(exc).__name__}: {exc})",
                        timeout=_is_timeout(exc),
                    ) from exc
                except (OSError, socket.timeout) as exc:
                    if isinstance(exc, (socket.timeout, TimeoutError)) or isinstance(exc, ConnectionError):
                        raise _Retryable(
                            f"transfer interrupted at {written} bytes ({exc})", timeout=_is_timeout(exc)
                        ) from exc
                    raise
            if total is not None and written != total:
                raise _Retryable(f"transfer incomplete: {written} of {total} bytes")
            return written
        finally:
            resp.close()

    size = _with_retries(once, url, policy, dataset, sleep=sleep)
    h = hashlib.sha256()
    with open(part, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    os.replace(part, dest)
    with contextlib.suppress(FileNotFoundError):
        meta_path.unlink()
    return FetchResult(dest, h.hexdigest(), int(size), resumed)
