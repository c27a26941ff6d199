"""A local Hugging Face endpoint for tests: downloads through ``huggingface_hub`` without the network."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

__all__ = ["COMMIT", "FakeHub"]

COMMIT = "c0ffee" + "0" * 34


class FakeHub:
    """A minimal Hugging Face endpoint: HEAD/GET ``/<repo>/resolve/<rev>/<file>`` with the hub's headers
    (X-Repo-Commit, ETag = SHA-256 for large files, git blob id for small ones). ``corrupt`` serves other
    bytes than the advertised digest; ``down`` refuses every request (403: a proxy or firewall in the way;
    huggingface_hub does not retry it, unlike 5xx and DNS errors which it retries for ~20 s)."""

    def __init__(self):
        self.files: dict[tuple[str, str], bytes] = {}
        self.corrupt = False
        self.down = False
        self.requests: list[str] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _serve(self, body_wanted: bool):
                hub.requests.append(f"{self.command} {self.path}")
                if hub.down:
                    self.send_response(403)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                parts = self.path.split("?")[0].strip("/").split("/")
                body = None
                if len(parts) >= 5 and parts[2] == "resolve":
                    body = hub.files.get(("/".join(parts[:2]), "/".join(parts[4:])))
                if body is None:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if len(body) > 100:
                    etag = hashlib.sha256(body).hexdigest()
                else:
                    etag = hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()
                sent = (
                    bytes(255 - b for b in body)
                    if (hub.corrupt and body_wanted and len(body) > 100)
                    else body
                )
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{etag}"')
                self.send_header("Content-Length", str(len(sent)))
                self.end_headers()
                if body_wanted:
                    self.wfile.write(sent)

            def do_HEAD(self):
                self._serve(False)

            def do_GET(self):
                self._serve(True)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}"

    def add_folder(self, repo: str, folder: Path) -> None:
        for p in Path(folder).iterdir():
            if p.is_file() and p.suffix in (".json", ".safetensors", ".ckpt", ".pt"):
                self.files[(repo, p.name)] = p.read_bytes()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeHub:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
