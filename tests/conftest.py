"""Fixtures shared by the test files (the scaffolding they build on lives in ``chorustic.testing``)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def torch_single_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy machine every op then waits for the
    other thread (measured: 80x slower): a test module that uses tiny models runs single-threaded
    (``pytestmark = pytest.mark.usefixtures("torch_single_thread")``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A local Hugging Face endpoint (chorustic.testing.hub.FakeHub) the harness downloads from, with an
    empty cache of its own."""
    from chorustic.testing.hub import FakeHub

    h = FakeHub()
    monkeypatch.setenv("HF_ENDPOINT", h.endpoint)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    import huggingface_hub.constants as hc

    # huggingface_hub reads HF_HUB_OFFLINE at import time; the endpoint is passed explicitly by
    # chorustic (read from HF_ENDPOINT at call time), so the hub's import-time constants stay as they are
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    yield h
    h.close()
