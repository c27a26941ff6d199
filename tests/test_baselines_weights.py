"""Weight resolution and fetching: local paths, the Hugging Face cache, downloads from a local fake hub
(127.0.0.1) with digest verification, offline mode, and clear errors for a missing checkpoint, a wrong
checkpoint file and a missing or incomplete checkout (each naming the fix)."""

from __future__ import annotations

import hashlib
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chorustic.hub import HubFile, file_matches_etag, git_blob_sha1
from chorustic.methods import MethodNotReady, discover
from chorustic.methods.checkout import checkout_imports, resolve_checkout
from chorustic.methods.weights import WeightsVerificationError, download_hub_files, resolve_hub_files
from chorustic.testing.checkpoints import (
    write_mantis,
    write_moment,
    write_nutime,
    write_tabicl,
    write_unishape,
)


@pytest.fixture(scope="module")
def discovery():
    return discover()


# -- the Hugging Face path ----------------------------------------------------------------------------


def test_missing_weights_name_the_file_the_cache_and_the_fix(discovery, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name, fname, param in [
        ("tabicl", "tabicl-classifier-v1.1-20250506.ckpt", "checkpoint"),
        ("tabicl_v2", "tabicl-classifier-v2-20260212.ckpt", "checkpoint"),
        ("moment_svm", "model.safetensors", "weights"),
        ("mantis_rf", "model.safetensors", "weights"),
        ("mantisv2_lr", "model.safetensors", "weights"),
    ]:
        m = discovery.get(name)
        with pytest.raises(MethodNotReady) as err:
            m.check_ready(**m.params())
        msg = str(err.value)
        assert fname in msg and str(tmp_path / "empty-cache") in msg and "HF_HUB_OFFLINE" in msg, msg
        assert f"chorustic fetch-weights {name}" in msg and f"{param}:" in msg and "huggingface.co/" in msg
        with pytest.raises(MethodNotReady):  # build refuses too, never downloads
            m.build(seed=0, **m.params())


def test_local_path_that_does_not_exist_is_named(discovery, tmp_path):
    m = discovery.get("mantis_rf")
    with pytest.raises(MethodNotReady, match="does not exist: .*nowhere"):
        m.check_ready(**m.params({"weights": str(tmp_path / "nowhere")}))
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(MethodNotReady, match="lacks 'model.safetensors'"):
        m.check_ready(**m.params({"weights": str(tmp_path / "emptydir")}))


def test_wrong_checkpoint_files_are_rejected_with_the_expected_source(discovery, tmp_path):
    import torch

    bogus = tmp_path / "tabicl-classifier-v1.1-20250506.ckpt"
    torch.save({"weights": torch.zeros(3)}, bogus)
    with pytest.raises(MethodNotReady, match="not a TabICL checkpoint.*jingang/TabICL"):
        discovery.get("tabicl").check_ready(checkpoint=str(bogus))
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(MethodNotReady, match="junk.ckpt"):
        discovery.get("tabicl").check_ready(checkpoint=str(junk))
    v2 = write_mantis(tmp_path / "v2", "v2")
    with pytest.raises(MethodNotReady, match="not a paris-noah/Mantis-8M checkpoint"):
        discovery.get("mantis_rf").check_ready(weights=str(v2))
    with pytest.raises(MethodNotReady, match="MOMENT|AutonLab/MOMENT-1-base"):
        discovery.get("moment_svm").check_ready(weights=str(v2))  # a Mantis folder is not MOMENT


def test_fetch_downloads_verifies_and_then_resolves_offline(discovery, hub, tmp_path, monkeypatch):
    weights = write_mantis(tmp_path / "mantis-src", "v1")
    hub.add_folder("paris-noah/Mantis-8M", weights)
    m = discovery.get("mantis_rf")
    paths = m.fetch_weights(**m.params())
    assert {p.name for p in paths} == {"model.safetensors", "config.json"}
    assert all(str(tmp_path / "hf-cache") in str(p) for p in paths)
    assert any(r.startswith("GET /paris-noah/Mantis-8M/resolve/main/model.safetensors") for r in hub.requests)
    # now offline: resolution reads the cache only, no request reaches the server
    n = len(hub.requests)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    m.check_ready(**m.params())
    est = m.build(seed=0, **m.params())
    assert Path(est.weights).is_relative_to(tmp_path / "hf-cache")
    assert len(hub.requests) == n


def test_fetch_detects_a_corrupted_download_and_deletes_it(hub, tmp_path):
    weights = write_tabicl(tmp_path / "tabicl-classifier-v2-20260212.ckpt")
    hub.files[("jingang/TabICL", weights.name)] = weights.read_bytes()
    hub.corrupt = True
    f = HubFile("jingang/TabICL", weights.name)
    with pytest.raises(WeightsVerificationError, match="does not match the digest"):
        download_hub_files("TabICLv2", [f], log=lambda m: None)
    with pytest.raises(MethodNotReady):  # nothing corrupt stays in the cache
        resolve_hub_files("TabICLv2", [f])
    hub.corrupt = False
    got = download_hub_files("TabICLv2", [f], log=lambda m: None)
    assert got[weights.name].read_bytes() == weights.read_bytes()


def test_fetch_without_network_or_offline_explains_the_manual_route(hub, monkeypatch):
    hub.down = True
    f = HubFile("AutonLab/MOMENT-1-base", "model.safetensors")
    with pytest.raises(
        MethodNotReady, match="downloading 'model.safetensors'.*failed.*resolve/main/model.safetensors"
    ):
        download_hub_files("MOMENT+SVM (moment_svm)", [f], fetch_name="moment_svm", log=lambda m: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MethodNotReady, match="HF_HUB_OFFLINE is set.*chorustic fetch-weights moment_svm"):
        download_hub_files("MOMENT+SVM (moment_svm)", [f], fetch_name="moment_svm", log=lambda m: None)


@pytest.mark.slow(reason="fetches and loads every method's weights from a local hub (~13 s)")
def test_fetch_weights_command_end_to_end(hub, tmp_path):
    """`chorustic fetch-weights moment_svm` in a subprocess against the fake hub, then `chorustic methods`
    reports it ready from the cache with HF_HUB_OFFLINE=1."""
    hub.add_folder("AutonLab/MOMENT-1-base", write_moment(tmp_path / "moment-src"))
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_CACHE": str(tmp_path / "hf-cache")}
    env.pop("HF_HUB_OFFLINE", None)
    cli = [sys.executable, "-m", "chorustic.cli"]
    out = subprocess.run(
        cli + ["fetch-weights", "moment_svm"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "moment_svm: ok:" in out.stdout and "verified" in out.stderr
    env["HF_HUB_OFFLINE"] = "1"
    out = subprocess.run(
        cli + ["methods", "--format", "csv"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    row = next(line for line in out.stdout.splitlines() if line.startswith("moment_svm,"))
    assert ",ready," in row
    bad = subprocess.run(
        cli + ["fetch-weights", "no_such_method"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert bad.returncode == 2 and "unknown method 'no_such_method'" in bad.stderr


def test_digests_match_git_and_sha256(tmp_path):
    p = tmp_path / "f.json"
    p.write_bytes(b'{"x": 1}\n')
    if shutil.which("git"):
        expected = subprocess.run(
            ["git", "hash-object", str(p)], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert git_blob_sha1(p) == expected
    assert file_matches_etag(p, f'"{git_blob_sha1(p)}"') is True
    assert file_matches_etag(p, hashlib.sha256(p.read_bytes()).hexdigest()) is True
    assert file_matches_etag(p, "0" * 64) is False
    assert file_matches_etag(p, "weird-etag") is None


# -- authors' checkouts -------------------------------------------------------------------------------


def test_missing_or_incomplete_checkouts_name_the_repository_and_the_parameter(
    discovery, tmp_path, monkeypatch
):
    monkeypatch.setenv("CHORUSTIC_CHECKOUTS", str(tmp_path / "checkouts"))
    for name, url in [
        ("unishape_rf", "github.com/ZLiu21/UniShape"),
        ("nutime_rf", "github.com/chenguolin/NuTime"),
        ("tic_fm", "github.com/fangjuntao/TIC-FM"),
    ]:
        m = discovery.get(name)
        with pytest.raises(MethodNotReady) as err:
            m.check_ready(**m.params())
        msg = str(err.value)
        assert (
            "no checkout" in msg and url in msg and str(tmp_path / "checkouts") in msg and "checkout:" in msg
        )
        (tmp_path / f"empty-{name}").mkdir()
        with pytest.raises(MethodNotReady, match=f"not a checkout of https://{url}: it lacks"):
            m.check_ready(**m.params({"checkout": str(tmp_path / f"empty-{name}")}))


def test_checkout_without_checkpoint_and_with_a_wrong_checkpoint(discovery, tmp_path):
    import torch

    root = write_unishape(tmp_path / "UniShape")
    ckpt = root / "pretrained_model_ckpt/unishape_checkpoint_zeroshot.pth"
    m = discovery.get("unishape_rf")
    params = {"in_channels": 16, "window_emb_dim": 16}
    moved = ckpt.rename(tmp_path / "elsewhere.pth")
    with pytest.raises(MethodNotReady, match="unishape_checkpoint_zeroshot.pth.*checkpoint:"):
        m.check_ready(**m.params({"checkout": str(root), **params}))
    m.check_ready(
        **m.params({"checkout": str(root), "checkpoint": str(moved), **params})
    )  # explicit path works
    wrong = tmp_path / "wrong.pth"
    torch.save({"state_dict": {"something.else": torch.zeros(2)}}, wrong)
    with pytest.raises(MethodNotReady, match="does not fit the UniShapeModel"):
        m.check_ready(**m.params({"checkout": str(root), "checkpoint": str(wrong), **params}))
    nut = write_nutime(tmp_path / "NuTime")
    with pytest.raises(MethodNotReady, match="does not fit the model built from"):
        discovery.get("nutime_rf").check_ready(checkout=str(nut), checkpoint=str(wrong))


def test_a_random_nutime_checkpoint_fills_every_tensor_of_the_model_the_plugin_builds(discovery, tmp_path):
    """write_nutime_checkpoint (the random weights benchmarks/archive_scale.py measures NuTime with) writes the
    released file's layout: the plugin loads every tensor of its model but the class head, and reports the
    checkpoint's other entries as skipped."""
    import numpy as np
    import torch

    from chorustic.methods import import_plugin_module
    from chorustic.paths import REPO_ROOT
    from chorustic.testing.checkpoints import write_nutime_checkpoint

    nut = write_nutime(tmp_path / "NuTime")
    plugin = import_plugin_module("nutime_rf", REPO_ROOT / "baselines" / "nutime_rf.py")
    ckpt = write_nutime_checkpoint(nut, tmp_path / "random.pth", seed=3, extra={"queue": torch.zeros(4)})
    model_keys = plugin.build_nutime(nut, "configs/demo_ft_epilepsy.json", series_length=512).state_dict()
    m = discovery.get("nutime_rf")
    X = np.random.default_rng(0).normal(size=(8, 1, 512)).astype(np.float32)
    est = m.build(seed=0, **m.params({"checkout": str(nut), "checkpoint": str(ckpt)})).fit(X, [0, 1] * 4)
    info = est.run_info_
    heads = [k for k in model_keys if k.startswith("1.fc.")]
    assert heads and info["tensors_loaded"] == len(model_keys) - len(heads)
    assert info["tensors_missing"] == len(heads) and info["tensors_skipped_unexpected"] == 1, info


def test_checkout_imports_do_not_leak_generic_module_names(tmp_path):
    for tag in ("a", "b"):
        (tmp_path / tag / "models").mkdir(parents=True)
        (tmp_path / tag / "models" / "__init__.py").write_text(f"WHO = {tag!r}\n")
    with checkout_imports(tmp_path / "a", ("models",)):
        import models as first
    with checkout_imports(tmp_path / "b", ("models",)):
        import models as second
    assert (first.WHO, second.WHO) == ("a", "b")
    assert "models" not in sys.modules and str(tmp_path / "a") not in sys.path
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "needs.py").write_text("import timm_is_not_installed_here\n")
    with (
        pytest.raises(MethodNotReady, match="needs the Python package 'timm_is_not_installed_here'"),
        checkout_imports(tmp_path / "c", ("needs",), label="X"),
    ):
        import needs  # noqa: F401


def test_resolve_checkout_accepts_a_complete_folder(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x.py").write_text("")
    assert resolve_checkout("L", tmp_path, default_name="X", required=["src/x.py"], repo_url="u") == tmp_path


def test_single_file_local_path_for_a_multi_file_model_is_refused(tmp_path):
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"x")
    with pytest.raises(MethodNotReady, match="set `weights` to a folder"):
        resolve_hub_files("M", [HubFile("r/m", "config.json"), HubFile("r/m", "model.safetensors")], local=f)
    got = resolve_hub_files(
        "M",
        [HubFile("r/m", "model.safetensors"), HubFile("r/m", "config.json", required=False)],
        local=tmp_path,
    )
    assert got == {"model.safetensors": f}


@pytest.mark.parametrize("error, says", [
    (ModuleNotFoundError("No module named 'momentfm'", name="momentfm"), "momentfm package is not installed"),
    (ImportError("cannot import name 'T5Config' from 'transformers'"),
     "failed to import (ImportError: cannot import name 'T5Config' from 'transformers')"),
])
def test_a_package_that_fails_to_import_keeps_its_reason(discovery, monkeypatch, tmp_path, error, says):
    """Not installed and installed-but-broken (a version clash) are told apart, with the import's own words;
    with the weights missing too, one message names both problems (issue 72, case 9: not the weights first,
    then, once they are fetched, the package)."""
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "momentfm":
            raise error
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MethodNotReady, match=re.escape(says)):
        discovery.get("moment_svm").check_packages({})
    with pytest.raises(MethodNotReady) as both:
        discovery.get("moment_svm").check_ready(weights=str(tmp_path / "no-such-folder"))
    text = str(both.value)
    assert text.startswith("2 problems: (1) ") and says in text and "no-such-folder" in text, text
