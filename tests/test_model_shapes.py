"""Architecture behaviour on a tiny configuration: channel counts, lengths, class counts, RSSC, masks."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
import torch
import torch.nn.functional as F

from chorustic.model import ChorusTIC, ChorusTICConfig, sample_rssc_assignment
from chorustic.model.hierarchical import balanced_partition, build_class_tree
from chorustic.resampling import resample_linear

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


TINY = ChorusTICConfig.tiny()


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return ChorusTIC(TINY).eval()


def _episode(n_ctx: int, n_query: int, channels: int, length: int, k: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n_ctx) % k
    X = torch.randn(1, n_ctx + n_query, channels, length, generator=g)
    return X, y[None]


@pytest.mark.parametrize("channels", [1, 3, 20, 1345])
def test_channel_counts_give_constant_width(model, channels):
    X, y = _episode(6, 3, channels, 64, 3)
    gen = torch.Generator().manual_seed(channels)
    with torch.no_grad():
        Xp, mask = model.prepare_inputs(X)
        gi = model.sample_assignment(mask, n_draws=2, generator=gen)
        H = model.encode_signal(Xp, gi)
        logits = model(X, y, group_idx=gi)
    assert H.shape == (1, 2, 9, TINY.d_h)  # d_h independent of C
    assert logits.shape == (1, 3, 3) and bool(torch.isfinite(logits).all())
    counts = Counter(gi[0, 0].flatten().tolist())
    if channels >= 16:
        assert len(counts) == 16  # one permutation: 16 distinct channels, the rest unused by this draw
    else:
        assert set(counts) == set(range(channels))
        assert set(counts.values()) <= {16 // channels, -(-16 // channels)}


@pytest.mark.parametrize("length,channels", [(15, 1), (17984, 2)])
def test_any_length_is_resampled_to_512(model, length, channels):
    X, y = _episode(5, 2, channels, length, 2)
    Xp, _ = model.prepare_inputs(X)
    assert Xp.shape == (1, 7, channels, 512)
    assert torch.equal(Xp, resample_linear(X, 512))  # the harness's one App. C.2 resampler
    ref = F.interpolate(X.reshape(-1, 1, length), size=512, mode="linear", align_corners=False)
    torch.testing.assert_close(Xp.reshape(-1, 1, 512), ref, rtol=0, atol=1e-5)
    with torch.no_grad():
        out = model(X, y, generator=torch.Generator().manual_seed(0))
    assert out.shape == (1, 2, 2) and bool(torch.isfinite(out).all())


@pytest.mark.parametrize("k", [2, 10, 11, 60])
def test_class_counts(model, k):
    n_ctx = 2 * k + 1
    X, y = _episode(n_ctx, 4, 2, 32, k)
    with torch.no_grad():
        out = model(X, y, generator=torch.Generator().manual_seed(0))
    assert out.shape == (1, 4, k) and bool(torch.isfinite(out).all())
    if k > TINY.max_classes:  # hierarchical: 0.9 * log(p + 1e-6), p a distribution over all K classes
        p = torch.exp(out / 0.9) - 1e-6
        assert torch.allclose(p.sum(-1), torch.ones(4), atol=1e-4)


def test_class_with_a_single_context_example(model):
    for k in (4, 11):
        y = torch.cat([torch.arange(k - 1).repeat(3), torch.tensor([k - 1])])[None]  # class k-1 once
        X = torch.randn(1, y.shape[1] + 3, 2, 32)
        with torch.no_grad():
            out = model(X, y, generator=torch.Generator().manual_seed(0))
        assert out.shape == (1, 3, k) and bool(torch.isfinite(out).all())


def test_balanced_class_tree():
    assert Counter(balanced_partition(25, 10)) == Counter({0: 9, 1: 8, 2: 8})
    assert [balanced_partition(101, 10).count(g) for g in range(10)] == [11] + [10] * 9
    assert balanced_partition(11, 10) == [0] * 6 + [1] * 5
    root = build_class_tree(torch.arange(101), 10)
    assert [len(c.classes) for c in root.children] == [11] + [10] * 9
    assert [len(c.classes) for c in root.children[0].children] == [6, 5]
    assert all(c.is_leaf for c in root.children[1:])


def test_the_cost_models_count_the_passes_of_the_tree_the_model_builds():
    from chorustic.class_tree import class_tree_passes

    def nodes(node):
        return 1 + sum(nodes(c) for c in node.children)

    for k in (2, 10, 11, 25, 60, 101, 150):
        assert class_tree_passes(k, 10) == nodes(build_class_tree(torch.arange(k), 10))
    assert class_tree_passes(60, 10) == 7 and class_tree_passes(101, 10) == 13


def test_labels_must_be_encoded(model):
    X = torch.randn(1, 6, 1, 32)
    with pytest.raises(ValueError, match="encode them as 0..K-1"):
        model(X, torch.tensor([[0, 2, 0, 2]]))
    with pytest.raises(ValueError, match="same number of classes"):
        model(torch.randn(2, 6, 1, 32), torch.tensor([[0, 1, 0, 1], [0, 1, 2, 0]]))
    with pytest.raises(ValueError, match="NaN"):
        model(torch.full((1, 6, 1, 32), float("nan")), torch.tensor([[0, 1, 0, 1]]))


def test_inputs_are_checked_for_bad_values_without_a_copy_of_their_size(model):
    """A finite sum clears the input at once; a sum that is not finite (a bad value, or float32 overflowing on
    finite values) checks every value, block by block: one bad value anywhere is found, large finite
    values pass."""
    X = torch.randn(1, 40, 3, 32)
    X[0, 37, 2, 5] = float("inf")
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.prepare_inputs(X)
    X[0, 37, 2, 5] = float("nan")
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.prepare_inputs(X)
    big = torch.full((1, 40, 3, 32), 3e38)  # the sum overflows, every value is finite
    assert torch.equal(model.prepare_inputs(big)[0][..., :1], torch.full((1, 40, 3, 1), 3e38))


# --------------------------------------------------------------------------- RSSC
def test_rssc_sampling_rules():
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1, 2:] = False  # episode 1: two valid channels
    mask[2, 1:] = False  # episode 2: one valid channel
    gen = torch.Generator().manual_seed(0)
    gi = sample_rssc_assignment(mask, num_groups=4, group_size=4, n_draws=3, generator=gen)
    assert gi.shape == (3, 3, 4, 4)
    assert set(gi[1].flatten().tolist()) == {0, 1} and (gi[1] == 0).sum(dim=(1, 2)).tolist() == [8, 8, 8]
    assert (gi[2] == 0).all()
    for e in range(3):
        c = Counter(gi[0, e].flatten().tolist())
        assert set(c) == set(range(5)) and sorted(c.values()) == [3, 3, 3, 3, 4]
    again = sample_rssc_assignment(
        mask, num_groups=4, group_size=4, n_draws=3, generator=torch.Generator().manual_seed(0)
    )
    assert torch.equal(gi, again)
    iid = sample_rssc_assignment(
        torch.ones(1, 40, dtype=torch.bool),
        num_groups=4,
        group_size=4,
        mode="random",
        generator=torch.Generator().manual_seed(1),
    )
    assert iid.shape == (1, 1, 4, 4) and int(iid.max()) < 40


def test_dedupe_schedule_equals_official_schedule(model):
    for channels in (1, 3, 20):
        X = torch.randn(2, 3, channels, 512)
        gi = sample_rssc_assignment(
            torch.ones(2, channels, dtype=torch.bool),
            num_groups=4,
            group_size=4,
            n_draws=2,
            generator=torch.Generator().manual_seed(channels),
        )
        with torch.no_grad():
            full = model.signal_encoder.encode_slots(X, gi, dedupe=False)
            fast = model.signal_encoder.encode_slots(X, gi, dedupe=True)
        assert full.shape == (2, 2, 3, 4, 4, TINY.hidden_dim)
        assert torch.allclose(full, fast, atol=1e-5), (channels, (full - fast).abs().max())


def test_univariate_row_is_encoded_once(model, monkeypatch):
    seen = []
    readout = model.signal_encoder.slot_readout
    orig = readout.forward
    monkeypatch.setattr(readout, "forward", lambda t: (seen.append(t.shape[0]), orig(t))[1])
    X = torch.randn(1, 7, 1, 512)
    gi = torch.zeros(1, 4, 4, 4, dtype=torch.long)  # 4 draws
    with torch.no_grad():
        model.signal_encoder.encode_slots(X, gi, dedupe=True)
    assert sum(seen) == 7  # 7 rows x 1 series, instead of 7 x 16 slots x 4 draws


def test_channel_mask_excludes_padding(model):
    X = torch.randn(1, 8, 5, 64)
    y = torch.tensor([[0, 1, 0, 1, 0]])
    mask = torch.tensor([[True, True, True, False, False]])

    def gen():
        return torch.Generator().manual_seed(3)

    with torch.no_grad():
        out = model(X, y, channel_mask=mask, generator=gen(), n_rssc_draws=3)
        X2 = X.clone()
        X2[:, :, 3:] = 1e3 * torch.randn(1, 8, 2, 64)
        out2 = model(X2, y, channel_mask=mask, generator=gen(), n_rssc_draws=3)
        alone = model(X[:, :, :3], y, generator=gen(), n_rssc_draws=3)
    assert torch.equal(out, out2)
    assert torch.allclose(out, alone, atol=1e-6)
    gi = model.sample_assignment(mask, n_draws=5, generator=gen())
    assert int(gi.max()) <= 2
    with pytest.raises(ValueError, match="absent"):
        model(X, y, channel_mask=mask, group_idx=torch.full((1, 4, 4), 4))


def test_queries_do_not_influence_each_other(model):
    X = torch.randn(1, 14, 3, 64)
    y = torch.tensor([[0, 1, 2, 0, 1, 2, 0, 1]])
    gi = torch.randint(0, 3, (1, 4, 4), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = model(X, y, group_idx=gi)[0]
        for keep in ([8], [9, 13], [10, 11, 12]):
            part = model(torch.cat([X[:, :8], X[:, keep]], dim=1), y, group_idx=gi)[0]
            assert torch.allclose(part, full[[k - 8 for k in keep]], atol=1e-6)
        X3 = X.clone()
        X3[:, 9:] = torch.randn(1, 5, 3, 64)
        assert torch.allclose(model(X3, y, group_idx=gi)[0, 0], full[0], atol=1e-6)


# --------------------------------------------------------------------------- ablations
def test_ablation_switches():
    no_chan = ChorusTIC(dataclasses.replace(TINY, use_channel_axis_attention=False)).eval()
    assert not any("channel_blocks" in k for k in no_chan.state_dict())
    linear = ChorusTIC(dataclasses.replace(TINY, col_embedding_mode="linear")).eval()
    assert not any(k.startswith("column_distribution_modeling.tf_col") for k in linear.state_dict())
    X, y = _episode(6, 2, 3, 32, 2)
    for m in (no_chan, linear):
        with torch.no_grad():
            out = m(X, y, generator=torch.Generator().manual_seed(0))
        assert out.shape == (1, 2, 2) and bool(torch.isfinite(out).all())
    # without channel attention a slot's representation ignores the other channels of its group
    tokens = torch.randn(1, 4, 32, TINY.hidden_dim)
    other = tokens.clone()
    other[:, 1:] = torch.randn(1, 3, 32, TINY.hidden_dim)
    with torch.no_grad():
        enc = no_chan.signal_encoder
        assert torch.allclose(enc.encode_groups(tokens)[:, 0], enc.encode_groups(other)[:, 0], atol=1e-6)
    # the "linear" column embedding is the cell projection alone
    H = torch.randn(1, 6, TINY.d_h)
    cdm = linear.column_distribution_modeling
    assert torch.allclose(cdm(H, 4), cdm.in_linear(H.unsqueeze(-1)))


def test_paper_config_matches_the_released_model():
    cfg = ChorusTICConfig.paper()
    assert (cfg.d_h, cfg.d_u, cfg.num_slots, cfg.patch_size) == (512, 512, 16, 16)
    assert ChorusTICConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown ChorusTICConfig keys"):
        ChorusTICConfig.from_dict({"hidden": 3})
    with pytest.raises(ValueError, match="col_embedding_mode"):
        dataclasses.replace(cfg, col_embedding_mode="nope")


# --------------------------------------------------------------------------- context standardization
def test_context_standardization_is_off_in_the_released_configuration_and_on_in_small():
    assert ChorusTICConfig.paper().context_standardization is False
    assert ChorusTICConfig.small().context_standardization is True
    # a checkpoint config written before the option existed loads as the released behaviour
    d = ChorusTICConfig.paper().to_dict()
    d.pop("context_standardization")
    assert ChorusTICConfig.from_dict(d).context_standardization is False


def test_context_standardization_uses_context_statistics_only():
    from chorustic.model.context_standardization import CLIP, STD_EPS, standardize_by_context

    g = torch.Generator().manual_seed(0)
    H = 5.0 + 0.1 * torch.randn(2, 10, 16, generator=g)  # a common component, small row variation
    Z = standardize_by_context(H, 6)
    ctx = H[:, :6]
    expect = ((H - ctx.mean(1, keepdim=True)) / (ctx.std(1, keepdim=True) + STD_EPS)).clamp(-CLIP, CLIP)
    assert torch.allclose(Z, expect)
    assert Z[:, :6].mean(1).abs().max() < 1e-4 and Z[:, :6].std(1).mean() > 0.95  # row variation restored
    H2 = H.clone()
    H2[:, 6:] = 1e6 * torch.randn(2, 4, 16, generator=g)  # queries change nothing of the context's scaling
    Z2 = standardize_by_context(H2, 6)
    assert torch.equal(Z2[:, :6], Z[:, :6]) and Z2.abs().max() <= CLIP
    one = standardize_by_context(H, 1)  # a single context row: centred, no division by zero
    assert torch.isfinite(one).all() and torch.allclose(one[:, 0], torch.zeros(2, 16), atol=1e-6)


def test_context_standardization_in_the_model_chunked_equals_unchunked_and_queries_stay_independent():
    std = ChorusTIC(dataclasses.replace(TINY, context_standardization=True)).eval()
    H = 3.0 + 0.01 * torch.randn(1, 14, TINY.d_h, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = std.row_representations(H, 8)
        chunked = std.row_representations(H, 8, row_chunk=3)
        assert torch.allclose(full, chunked, atol=1e-5)
        alone = std.row_representations(torch.cat([H[:, :8], H[:, 12:13]], dim=1), 8)
        assert torch.allclose(alone[:, 8], full[:, 12], atol=1e-5)
        # the cell embeddings of the rows differ as much as the context's spread, not as little as H's
        _, emb = std.row_representations(H, 8, return_embeddings=True)
        plain = ChorusTIC(TINY).eval()
        plain.load_state_dict(std.state_dict())
        _, plain_emb = plain.row_representations(H, 8, return_embeddings=True)
    rel = lambda e: float(e.std(1).mean() / e.std())  # noqa: E731
    assert rel(emb) > 10 * rel(plain_emb)
