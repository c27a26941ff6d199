"""One contract suite for every plugin in baselines/: each discovered plugin (a new file included, with
no list to edit) runs the full contract of ``chorustic check-method`` on generated data.

Pretrained methods run on SMALL random-weight checkpoints in the real formats, and the checkout-based
plugins (UniShape, NuTime, TIC-FM) against minimal stand-in checkouts with the authors' module layout
and entry points (contract only: the stand-ins are not the authors' models), all written by
:func:`chorustic.testing.checkpoints.baseline_assets` and loaded through the plugins' real local-path
loaders. No network, no real weights.
"""

from __future__ import annotations

import dataclasses
import sys
from unittest import mock

import numpy as np
import pytest

from chorustic.methods import GROUPS, Method, discover
from chorustic.methods.check import check_method, synthetic_task
from chorustic.methods.embedding_memo import EMBEDDING_MEMO
from chorustic.methods.weights import clear_cache
from chorustic.testing.checkpoints import baseline_assets

# --------------------------------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def discovery():
    d = discover()
    assert not d.broken, f"plugin files failed to load: {d.broken}"
    return d


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    """name -> build params pointing the plugin at tiny local assets (chorustic.testing.checkpoints)."""
    return baseline_assets(tmp_path_factory.mktemp("baseline_assets"))


make_data = synthetic_task  # separable classes, length 512 (resampled) or 64 (native)


#: Every plugin file in baselines/, discovered as the harness discovers them: a plugin added to the folder is
#: checked with no change here. Plugins that need weights or a checkout get tiny local assets (fixture
#: ``assets``); any other plugin runs with its default parameters and must then be runnable offline.
PLUGINS = sorted(discover().methods)


# --------------------------------------------------------------------------------------------------
# the suite
# --------------------------------------------------------------------------------------------------

EXPECTED = {  # name: (display name, group, fits_on_target) -- the paper's columns (assignment table)
    "tabicl": ("TabICL", "Generic ICL", False),
    "tabicl_v2": ("TabICLv2", "Generic ICL", False),
    "moment_svm": ("MOMENT+SVM", "Frozen TSFM", True),
    "mantis_rf": ("Mantis+RF", "Frozen TSFM", True),
    "mantisv2_lr": ("MantisV2+LR", "Frozen TSFM", True),
    "mantisv2_rf": ("MantisV2+RF", "Frozen TSFM", True),
    "unishape_rf": ("UniShape+RF", "Frozen TSFM", True),
    "nutime_rf": ("NuTime+RF", "Frozen TSFM", True),
    "tic_fm": ("TIC-FM", "Time-series ICL", False),
    "tict": ("TiCT", "Time-series ICL", False),
    "minirocket": ("MiniRocket", "Classical", True),
    "multirocket_hydra": ("MultiRocket-Hydra", "Classical", True),
    "quant": ("QUANT", "Classical", True),
    "dtw_1nn": ("1NN-DTW", "Classical", True),
}


def test_every_paper_method_is_discovered_with_its_table_metadata(discovery):
    for name, (display, group, target_fit) in EXPECTED.items():
        m = discovery.get(name)
        assert (m.info.display_name, m.info.group, m.info.fits_on_target) == (display, group, target_fit), (
            name
        )
        assert m.info.group in GROUPS
        assert discovery.sources[name] == f"{name}.py"
        if isinstance(m, Method):
            res = m.resources
            assert (
                set(res) == {"threads", "mem_mb", "runtime", "gpu"}
                and res["threads"] >= 1
                and res["runtime"] >= 1
            )
    assert discovery.get("tict").info.reported


def test_every_paper_method_has_a_conda_environment():
    import yaml

    from chorustic.paths import REPO_ROOT

    for name in EXPECTED:
        env = yaml.safe_load((REPO_ROOT / "workflow" / "envs" / f"{name}.yaml").read_text())
        pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
        assert "-e ${CHORUSTIC_REPO}" in pip and any(p.startswith("torch==") for p in pip), name


@pytest.mark.parametrize("name", PLUGINS)
def test_plugin_passes_the_contract(name, discovery, assets):
    """The full contract of `chorustic check-method` (metadata, resources, parameters, readiness; fit /
    predict_proba / classes_ / determinism / query order / a missing class / univariate and, for native
    input, variable-length series) on generated data."""
    method = discovery.get(name)
    run = check_method(method, assets.get(name, {}))
    if any(c.name == "ready" and c.status == "fail" for c in run.clauses):
        pytest.fail(
            f"plugin {name!r} is not runnable offline with its default parameters "
            f"({next(c.detail for c in run.clauses if c.name == 'ready')}); give it tiny local assets in the "
            "`assets` fixture of tests/test_baselines_contract.py so its contract is checked"
        )
    assert run.ok, f"{name} breaks {', '.join(c.name for c in run.failed)}:\n{run.report()}"
    if isinstance(method, Method):
        assert {c.name for c in run.clauses if c.passed} >= {"fit returns self", "probabilities", "missing class"}
        assert run.observed["proba_missing_class"].shape == (9, 2)
    if name in ("unishape_rf", "nutime_rf"):  # checkout plugins log loaded / skipped tensors
        X, y = make_data("resampled", 12, 2, seed=0)
        est = method.build(seed=0, **method.params(assets[name])).fit(X, y)
        info = est.run_info_
        assert info["tensors_loaded"] > 0 and info["tensors_skipped_unexpected"] >= 1, info


def test_plugins_of_the_paper_are_all_discovered():
    assert set(EXPECTED) | {"chorustic"} <= set(PLUGINS)
    native = {n for n in PLUGINS if getattr(discover().methods[n].info, "input_kind", None) == "native"}
    assert native >= {"tabicl", "moment_svm", "minirocket", "quant", "dtw_1nn", "unishape_rf"}


def test_frozen_features_learn_separable_classes(discovery, assets):
    """Random backbones still carry signal: RF on their features separates an easy synthetic task."""
    for name in ("mantis_rf", "mantisv2_lr"):
        method = discovery.get(name)
        X, y = make_data("resampled", 60, 1, seed=5)
        Xq, yq = make_data("resampled", 30, 1, seed=6)
        est = method.build(seed=0, **method.params(assets[name])).fit(X, y)
        assert (est.predict(Xq) == yq).mean() >= 0.8, name


@pytest.mark.parametrize("name", ["mantis_rf", "moment_svm"])
def test_a_contexts_embeddings_are_made_once_per_job_and_as_if_alone(discovery, assets, name):
    """Two contexts that share series and predict the same test split: the second embeds only its new series
    (every channel: 2 per series), and its features and probabilities are those of a job that ran it alone."""
    method = discovery.get(name)
    params = method.params(assets[name])
    X, y = make_data(method.info.input_kind, 20, 2, seed=7)
    Xq, _ = make_data(method.info.input_kind, 10, 2, seed=8)
    first, second = np.r_[0:12], np.r_[6:18]  # 6 series in common
    EMBEDDING_MEMO.clear()
    alone = method.build(seed=0, **params).fit(X[second], y[second])
    p_alone, f_alone = alone.predict_proba(Xq), alone.transform(X[second])
    EMBEDDING_MEMO.clear()
    method.build(seed=0, **params).fit(X[first], y[first]).predict_proba(Xq)
    est = method.build(seed=0, **params).fit(X[second], y[second])
    p = est.predict_proba(Xq)
    assert est.run_info_["embeddings_computed"] == 6 * 2  # its 6 new series, both channels
    assert est.run_info_["embeddings_reused"] == 6 * 2 + 10 * 2  # the 6 shared and the test split
    assert np.array_equal(est.transform(X[second]), f_alone)
    assert np.array_equal(p, p_alone)


def test_readout_switch_changes_features(discovery, assets):
    method = discovery.get("mantisv2_rf")
    X, _ = make_data("resampled", 4, 1, seed=9)
    base = method.build(seed=0, **method.params(assets["mantisv2_rf"]))
    combined = method.build(
        seed=0, **method.params({**assets["mantisv2_rf"], "layer": 0, "token": "combined"})
    )
    assert base.transform(X).shape == (4, 32)
    assert combined.transform(X).shape == (4, 64)  # CLS and mean token concatenated


def test_tabicl_chunks_queries_to_fit_memory_and_refuses_impossible_tables(discovery, assets):
    method = discovery.get("tabicl")
    params = method.params(assets["tabicl"])
    X, y = make_data("native", 20, 2, seed=10)
    Xq, _ = make_data("native", 30, 2, seed=11)
    full = method.build(seed=0, **params).fit(X, y)
    p_full = full.predict_proba(Xq)
    # a row's column embeddings: 128 features x 16 dims x 4 B = 8 KiB per member (v1.1 holds one more table than
    # its members where a pass has several); 0.35 MiB holds one member's pass over the 20 context rows and 24 of
    # the 30 queries
    tight = method.build(seed=0, **{**params, "max_memory_mb": 0.35}).fit(X, y)
    p_tight = tight.predict_proba(Xq)
    assert tight.run_info_["ensemble_batch"] == 1 and tight.run_info_["query_chunk"] == 24
    assert tight.run_info_["query_passes"] == 2
    assert np.allclose(p_full, p_tight, atol=1e-5)
    with pytest.raises(MemoryError, match="GiB are available"):
        method.build(seed=0, **{**params, "max_memory_mb": 0.01}).fit(X, y).predict_proba(Xq)


def test_tabicl_sizes_its_passes_to_a_fixed_budget_not_to_the_machine(discovery, assets, monkeypatch):
    """The same table gets the same ensemble batch and query rows per pass on a machine with 4 GB free
    and on one with 400 GB (so the same float rounding); a pass is cut only where WORK_MB would be passed."""
    method = discovery.get("tabicl")
    X, y = make_data("native", 20, 2, seed=10)
    est = method.build(seed=0, **method.params(assets["tabicl"])).fit(X, y)
    tabicl = type(est)._plan.__globals__  # the plugin module the estimator's code reads
    plans = []
    for free_mb in (4_000, 400_000):
        monkeypatch.setitem(tabicl, "available_memory_mb", lambda free_mb=free_mb: free_mb)
        plans.append(est._plan(30))
    assert plans[0] == plans[1] == (2, 30)  # the members of a normalisation (4 / 2) and every query: 1.2 MB
    monkeypatch.setitem(tabicl, "WORK_MB", 0.35)  # rows of 8 KiB, one member's table: 24 queries per pass
    cut = []
    for free_mb in (4_000, 400_000):
        monkeypatch.setitem(tabicl, "available_memory_mb", lambda free_mb=free_mb: free_mb)
        cut.append(est._plan(30))
    assert cut == [(1, 24), (1, 24)]
    est.set_params(job_pass_mb=1.5)  # the job's largest context holds 1.5 MB anyway: this one plans within it
    assert est._plan(30) == (2, 30) and est.pass_budget_mb_ == 1.5
    # a whole stage of this table's pass (20 + 30 rows, 2 members) holds far less than STAGE_MB: it plans beside it
    small = tabicl["pass_stage_mb"](20, 30, est.n_features_, 2)
    assert small == pytest.approx(2 * 50 * est.n_features_ * tabicl["WHOLE_STAGE_BYTES_PER_CELL"] / 2**20)
    assert small < tabicl["STAGE_MB"] / 2
    monkeypatch.setitem(tabicl, "available_memory_mb", lambda: 1.5 + small + 0.1)
    assert est._plan(30) == (2, 30) and est.pass_budget_mb_ == 1.5 and est.stage_mb_ == small
    monkeypatch.setitem(tabicl, "available_memory_mb", lambda: 1.5 + small - 0.1)  # less than the job asked for
    assert est._plan(30) == (1, 24) and est.pass_budget_mb_ == 0.35  # each context within WORK_MB, as alone
    # a table whose pass's stage is batched within STAGE_MB (its whole stage holds more)
    monkeypatch.setitem(tabicl, "WHOLE_STAGE_BYTES_PER_CELL", 2.0**40)
    monkeypatch.setitem(tabicl, "available_memory_mb", lambda: 1.5 + tabicl["STAGE_MB"] - 0.1)  # less than it asked
    assert est._plan(30) == (1, 24) and est.pass_budget_mb_ == 0.35  # each context within WORK_MB, as alone
    # rows so wide that one row of the row interaction holds 100 MB more than STAGE_MB: the passes plan beside it
    monkeypatch.setitem(tabicl, "ROW_STAGE_BYTES_PER_FEATURE", (tabicl["STAGE_MB"] + 100) * 2**20 / est.n_features_)
    monkeypatch.setitem(tabicl, "available_memory_mb", lambda: 1.5 + tabicl["STAGE_MB"] + 100 - 0.1)
    assert est._plan(30) == (1, 24) and est.pass_budget_mb_ == 0.35  # room beside STAGE_MB, not beside the row
    monkeypatch.setitem(tabicl, "available_memory_mb", lambda: 1.5 + tabicl["STAGE_MB"] + 100.1)
    assert est._plan(30) == (2, 30) and est.pass_budget_mb_ == 1.5


def test_tabicl_runs_the_ensemble_members_of_one_normalisation_per_pass(discovery, assets, monkeypatch):
    """tabicl groups its 8 members by normalisation (none, power) and runs a group at a time: a pass holds 4
    members, which is what the plan (and the job's memory) counts."""
    method = discovery.get("tabicl")
    X, y = make_data("native", 20, 3, seed=10)
    est = method.build(seed=0, **method.params({**assets["tabicl"], "n_estimators": 8})).fit(X, y)
    tabicl = type(est)._plan.__globals__
    groups = []
    original = type(est.model_)._batch_forward

    def spy(self, Xs, *args, **kwargs):
        groups.append(Xs.shape[0])
        return original(self, Xs, *args, **kwargs)

    monkeypatch.setattr(type(est.model_), "_batch_forward", spy)
    est.predict_proba(X[:5])
    assert groups == [4, 4] and est.run_info_["ensemble_batch"] == tabicl["ensemble_batch"](8, 8) == 4


def test_forward_plan_halves_the_ensemble_then_cuts_the_queries_but_not_below_the_context(discovery):
    tabicl = sys.modules[type(discovery.get("tabicl")).__module__]
    mb = 2**20  # one row of one member's table is 1 MB at 1 feature of 2**20 bytes; v1.1 holds one table more
    assert tabicl.forward_plan(10, 30, 1, mb, 8, budget_mb=1000) == (8, 30, 360)  # fits whole: 9 tables x 40 rows
    # 8 -> 4 -> 2 members (3 tables: 120 MB) -> 1, which holds its own table only (embed_lone_tables_once)
    assert tabicl.forward_plan(10, 30, 1, mb, 8, budget_mb=100) == (1, 30, 40)
    assert tabicl.forward_plan(10, 30, 1, mb, 8, budget_mb=100, reorders=False) == (2, 30, 80)  # v2: no extra table
    assert tabicl.forward_plan(10, 30, 1, mb, 8, budget_mb=30) == (1, 20, 30)  # one member, 20 queries
    assert tabicl.forward_plan(10, 30, 1, mb, 2, budget_mb=30) == (1, 20, 30)  # from 2 members
    # the queries are never cut below the context rows (each pass embeds the context again): over the budget
    assert tabicl.forward_plan(10, 30, 1, mb, 8, budget_mb=5) == (1, 10, 20)
    assert tabicl.forward_plan(10, 3, 1, mb, 8, budget_mb=5)[1] == 3
    assert tabicl.forward_plan(10, 30, 1, mb, 8, budget_mb=5, reorders=False) == (1, 10, 20)  # the same alone
    assert tabicl.query_passes(30, 10) == 3 and tabicl.query_passes(30, 30) == 1
    # v1.1 embeds one table a pass: its model's passes hold a normalisation's 4 of 8 members
    assert [tabicl.column_embedding_factor(8, m, True) for m in (8, 4, 2, 1)] == [1, 1, 2, 4]
    assert tabicl.column_embedding_factor(8, 1, False) == 1  # v2: every member's table anyway


def test_tabicl_stages_batch_on_a_cpu_within_their_budget_and_predict_the_same(discovery, assets, monkeypatch):
    """On a CPU, tabicl runs each stage on all its inputs at once; budget_stages splits the column embedding into
    batches of columns and the row interaction and ICL into batches of rows, as tabicl does on a GPU: the same
    probabilities up to float rounding, with the stage's work split into several forwards."""
    method = discovery.get("tabicl")
    X, y = make_data("native", 40, 2, seed=10)
    Xq, _ = make_data("native", 20, 2, seed=11)
    est = method.build(seed=0, **method.params(assets["tabicl"])).fit(X, y)
    tabicl = type(est)._plan.__globals__  # the plugin module the estimator's code reads
    model = est.model_.model_
    cls = tabicl["_stage_budget_manager_class"]()
    calls = []
    original = cls._run_forward

    def counted(self, forward_fn, inputs):
        calls.append(self.enc_name)
        return original(self, forward_fn, inputs)

    monkeypatch.setattr(cls, "_run_forward", counted)
    whole = est.predict_proba(Xq)  # the default STAGE_MB: every stage of this small table at once
    assert isinstance(model.col_embedder.inference_mgr, cls)
    assert {"tf_col", "tf_row", "tf_icl"} <= set(calls)
    whole_calls = list(calls)
    calls.clear()
    monkeypatch.setitem(tabicl, "STAGE_MB", 0.05)  # a few columns and rows per forward (every predict sets it)
    split = est.predict_proba(Xq)
    assert calls.count("tf_col") > whole_calls.count("tf_col") and calls.count("tf_row") > whole_calls.count("tf_row")
    assert np.allclose(whole, split, atol=1e-5)


@pytest.mark.slow(reason="TabICL jobs on real data (~8 s)")
def test_tabicl_embeds_a_lone_members_table_once_with_tabicls_own_probabilities(discovery, monkeypatch, tmp_path):
    """v1.1's layout (no feature groups): given the members' feature orders, tabicl embeds the first member's table
    and fills a reordered copy for every member of the pass, two copies where the pass has one member. The plugin
    has a lone member's table embedded as it is: its column embedder gets no orders for a pass of one member (it
    still does for a pass of several), and the probabilities are bit for bit those of tabicl's own path."""
    from chorustic.testing.checkpoints import write_tabicl

    ckpt = write_tabicl(tmp_path / "tabicl-classifier-v1.1-20250506.ckpt", col_feature_group=False,
                        col_target_aware=False, col_ssmax="none", icl_ssmax="none")
    method = discovery.get("tabicl")
    tabicl = type(method).estimator._plan.__globals__  # the plugin module this method's code reads
    X, y = make_data("native", 20, 3, seed=10)
    Xq, _ = make_data("native", 9, 3, seed=11)
    seen = []

    def run(batch):
        seen.clear()
        est = method.build(seed=0, **method.params({"checkpoint": str(ckpt), "batch_size": batch})).fit(X, y)
        return est.predict_proba(Xq), est.model_.model_.col_embedder

    lone, embedder = run(1)
    tabicls = type(embedder).__mro__[1]  # tabicl's ColEmbedding
    original = tabicls._inference_forward

    def spy(self, X, y_train, embed_with_test=False, feature_shuffles=None, mgr_config=None):
        seen.append((X.shape[0], feature_shuffles is None))
        return original(self, X, y_train, embed_with_test, feature_shuffles, mgr_config)

    monkeypatch.setattr(tabicls, "_inference_forward", spy)
    assert np.array_equal(run(1)[0], lone) and seen and set(seen) == {(1, True)}  # the lone table, no orders
    run(8)
    assert seen and set(seen) == {(4, False)}  # four members a pass: tabicl's copies, as before
    monkeypatch.setitem(tabicl, "embed_lone_tables_once", lambda model: None)
    embedder.__class__ = tabicls  # tabicl's own path (the model is cached per checkpoint file)
    own, _ = run(1)
    assert set(seen) == {(1, False)} and np.array_equal(own, lone)


def test_tabicl_cost_asks_for_what_its_passes_hold(discovery):
    """ShapesAll's 60 + 60 rows of 512 features: a pass of four members (eight, four per normalisation) holds 5
    tables of 120 x 512 column embeddings of 512 bytes (v1.1's reordered copy included) and one stage's working
    memory (STAGE_MB), which the job's memory adds to the model's base; Crop's 46 features likewise; Crop in full
    is cut to WORK_MB."""
    from chorustic.methods.cost import JobSize

    method = discovery.get("tabicl")
    tabicl = sys.modules[type(method).__module__]
    shapes = JobSize(n_train=60, n_test=60, n_channels=1, length=512, n_classes=60)
    mem, _ = method.job_cost(shapes)
    base, _ = method.cost.estimate(shapes)
    assert mem - base == pytest.approx(5 * 120 * 512 * 512 / 2**20 + tabicl.STAGE_MB)
    crop = JobSize(n_train=72, n_test=168, n_channels=1, length=46)
    assert method.job_cost(crop)[0] - method.cost.estimate(crop)[0] == pytest.approx(
        5 * 240 * 46 * 512 / 2**20 + tabicl.STAGE_MB)
    big = JobSize(n_train=7200, n_test=16800, n_channels=1, length=46)  # passes cut to WORK_MB
    assert method.job_cost(big)[0] - method.cost.estimate(big)[0] <= tabicl.WORK_MB + tabicl.STAGE_MB
    # PenDigits' 1 % stand-in: 75 + 35 rows of 16 features, four members a pass, a whole stage far within STAGE_MB
    tiny = JobSize(n_train=75, n_test=35, n_channels=2, length=8)
    cells = 4 * 110 * 16
    assert method.job_cost(tiny)[0] - method.cost.estimate(tiny)[0] == pytest.approx(
        5 * 110 * 16 * 512 / 2**20 + cells * tabicl.WHOLE_STAGE_BYTES_PER_CELL / 2**20)
    assert cells * tabicl.WHOLE_STAGE_BYTES_PER_CELL / 2**20 < tabicl.STAGE_MB / 4


def test_tabicl_cost_holds_one_row_of_its_row_interaction_beyond_the_stage_budget(discovery, monkeypatch):
    """The row interaction runs on whole rows: DuckDuckGeese's rows of 363,150 flattened features hold ~1.9 GB
    each in that stage, beyond STAGE_MB; the job asks for that row instead of STAGE_MB (the passes planned beside
    it: test_tabicl_sizes_its_passes_to_a_fixed_budget_not_to_the_machine)."""
    from chorustic.methods.cost import JobSize

    method = discovery.get("tabicl")
    tabicl = type(method).job_cost.__globals__  # the plugin module its code reads (another discovery loads another)
    features = 1345 * 270
    row = features * tabicl["ROW_STAGE_BYTES_PER_FEATURE"] / 2**20
    assert tabicl["stage_mb"](features) == pytest.approx(row) and row > 3 * tabicl["STAGE_MB"]
    assert tabicl["stage_mb"](46) == tabicl["stage_mb"](8928) == tabicl["STAGE_MB"]  # Crop, FaceDetection
    ddg = JobSize(n_train=50, n_test=50, n_channels=1345, length=270, n_classes=5)
    with_row = method.job_cost(ddg)[0]
    monkeypatch.setitem(tabicl, "ROW_STAGE_BYTES_PER_FEATURE", 0.0)  # the stage budget alone, as before
    assert with_row - method.job_cost(ddg)[0] == pytest.approx(row - tabicl["STAGE_MB"])


def test_tabicl_cost_charges_each_pass_its_context_again(discovery):
    """100 context rows of 4,096 features and 1,000 queries: one member's pass over them all would hold 2.2 GB,
    so the queries go 924 per pass (one member's table of 1,024 rows x 2 MB = WORK_MB): two passes, and the
    second embeds the 100 context rows again, which the job's time charges as 100 more query rows. And v1.1 embeds
    one table per pass: at one member a pass, its 1,200 rows' columns 4 times as often as the model's passes of a
    normalisation's 4 members; TabICLv2 (the same pass: a lone member's table, nothing beside it) embeds
    every member's table anyway."""
    from chorustic.methods.cost import JobSize

    method, v2 = discovery.get("tabicl"), discovery.get("tabicl_v2")
    size = JobSize(n_train=100, n_test=1000, n_channels=1, length=4096)
    assert method._pass_plan(size)[:2] == (1, 924) and v2._pass_plan(size)[:2] == (1, 924)
    _, seconds = method.job_cost(size)
    more = method.cost.estimate(dataclasses.replace(size, n_test=1100))[1]
    assert seconds == pytest.approx(more + 3 * method.cost.time_ns_per_value * 1200 * 4096 / 1e9)
    _, seconds = v2.job_cost(size)
    assert seconds == pytest.approx(v2.cost.estimate(dataclasses.replace(size, n_test=1100))[1])


def test_tabicl_smaller_contexts_plan_within_the_largest_contexts_pass(discovery):
    """1,000 context rows of 4,096 features and 1,000 queries: one member's pass holds 4,000 MB (its table of 2,000
    rows x 2 MB; the queries are not cut below the context). The job asks for that memory, so its 500-row
    context runs its queries in one pass within it (3,000 MB) instead of two within WORK_MB, and the job's time
    charges no context twice; at max_memory_mb=2,048 it does."""
    from chorustic.methods.cost import JobSize

    method = discovery.get("tabicl")
    tabicl = sys.modules[type(method).__module__]
    size = JobSize(n_train=1000, n_test=1000, n_channels=1, length=4096, context_train=(1000, 500))
    half = JobSize(n_train=500, n_test=1000, n_channels=1, length=4096)
    assert method.job_params(size) == {"job_pass_mb": 4000.0}
    assert method._pass_plan(half, 4000.0) == (1, 1000, 3000.0) and method._pass_plan(half)[:2] == (1, 524)
    once = method.cost.estimate(size)[1] + sum(method.repeated_embedding_s(c, 1) for c in size.contexts())
    assert method.job_cost(size)[1] == pytest.approx(once)  # no context twice (one member a pass: 4 embeddings)
    assert method.job_cost(size, max_memory_mb=2048)[1] > method.job_cost(size)[1]
    assert method.job_params(size, max_memory_mb=2048) == {}
    # the largest context's pass is not always the job's largest: 700 rows fit 4 members where 1,000 fit 2
    mixed = JobSize(n_train=1000, n_test=100, n_channels=1, length=1024, context_train=(1000, 700))
    assert method.job_params(mixed) == {"job_pass_mb": 2000.0}  # 5 tables x 800 rows x 0.5 MB
    assert method.job_cost(mixed)[0] - method.cost.estimate(mixed)[0] == pytest.approx(2000.0 + tabicl.STAGE_MB)


def _gunpoint_job(folder, results, params, protocols):
    """A TabICL job on GunPoint (from aeon's copy, with its contexts) writing to ``results``."""
    from chorustic.data import load_dataset
    from chorustic.evaluation.job import JobSpec
    from chorustic.protocols.contexts import build_contexts, write_contexts

    data, cache, ctx = folder / "raw", folder / "cache", folder / "GunPoint.json"
    if not ctx.exists():
        ds = load_dataset("GunPoint", data, cache_dir=cache, offline=True)
        write_contexts(ctx, build_contexts(ds.y_train, dataset="GunPoint", archive="UCR"))
    return JobSpec(method="tabicl", plugin="tabicl", dataset="GunPoint", archive="UCR", results_dir=str(results),
                   contexts_file=str(ctx), data_dir=str(data), cache_dir=str(cache), params=params,
                   protocols=protocols)


@pytest.mark.slow(reason="two TabICL jobs on GunPoint (~18 s)")
def test_tabicl_job_plans_its_smaller_contexts_within_its_largest_pass(discovery, assets, monkeypatch, tmp_path):
    """A TabICL job through the harness on GunPoint (50 + 150 rows of 150 features), with WORK_MB so small that each
    context alone would cut its queries to its context rows: the harness gives every context the memory of the
    largest context's pass (job_pass_mb, from the job's contexts), so the 10-series contexts predict their 150
    queries in one pass, not 15; the probabilities are those of the cut passes up to float rounding."""
    from chorustic.evaluation.job import run_job
    from chorustic.evaluation.results import read_result_file
    from chorustic.methods.cost import JobSize

    method = discovery.get("tabicl")
    tabicl = type(method).estimator._plan.__globals__  # the plugin module this method's code reads
    monkeypatch.setitem(tabicl, "WORK_MB", 0.01)
    monkeypatch.setattr("chorustic.methods.discover", lambda *a, **k: discovery)  # the job runs this module

    def job(results):
        spec = _gunpoint_job(tmp_path, results, assets["tabicl"], ["full", "fixed5"])
        return {(r["protocol"], r["seed"]): r for r in run_job(spec)["runs"]}

    whole = job(tmp_path / "job")
    largest = method._pass_plan(JobSize(50, 150, 1, 150), **assets["tabicl"])[2]  # the full context's pass
    assert {r["extra"]["job_pass_mb"] for r in whole.values()} == {round(largest, 3)}
    assert all(r["extra"]["query_passes"] == 1 for r in whole.values())
    monkeypatch.setattr(type(method), "job_params", lambda self, size, **params: {})  # each context on its own
    cut = job(tmp_path / "cut")
    assert cut[("fixed5", 0)]["extra"]["query_passes"] == 15 and cut[("full", 0)]["extra"]["query_passes"] == 3
    for key in whole:
        a, b = (read_result_file(tmp_path / d / r[key]["result_file"]).proba for r, d in ((whole, "job"), (cut, "cut")))
        assert np.allclose(a, b, atol=1e-5), key


@pytest.mark.slow(reason="three TabICL jobs in workers with other hash seeds (~15 s)")
def test_tabicl_jobs_predict_the_same_whatever_the_hash_seed_of_the_caller(assets, monkeypatch, tmp_path):
    """tabicl orders its normalisation groups by a set of strings, and sums its members in that order: two
    processes with other string-hash salts give probabilities ~3e-8 apart. The supervisor starts its workers with
    one hash seed, so the same job run from two shells with other PYTHONHASHSEED writes the same bits."""
    from chorustic.evaluation.results import read_result_file
    from chorustic.evaluation.supervisor import run_supervised

    probas = []
    for salt in ("1", "4", "random"):  # 1 and 4 order {"none", "power"} differently
        monkeypatch.setenv("PYTHONHASHSEED", salt)
        spec = _gunpoint_job(tmp_path, tmp_path / salt, {**assets["tabicl"], "n_estimators": 8}, ["full"])
        run = run_supervised(spec)["runs"][0]
        assert run["status"] == "ok", run
        probas.append(read_result_file(tmp_path / salt / run["result_file"]).proba)
    assert all(np.array_equal(probas[0], p) for p in probas[1:])


def test_tabicl_respects_the_job_memory_limit_exported_by_the_harness(discovery, assets, monkeypatch):
    method = discovery.get("tabicl")
    X, y = make_data("native", 20, 2, seed=10)
    est = method.build(seed=0, **method.params(assets["tabicl"])).fit(X, y)
    monkeypatch.setenv("CHORUSTIC_MEM_LIMIT_MB", "1")  # far below this process' resident memory
    with pytest.raises(MemoryError, match="more memory"):
        est.predict_proba(X[:3])


def test_single_class_context_predicts_that_class(discovery, assets):
    method = discovery.get("minirocket")
    X, _ = make_data("native", 6, 1, seed=12)
    est = method.build(seed=0, **method.params(assets["minirocket"])).fit(X, np.full(6, 2))
    assert np.array_equal(est.classes_, [2]) and np.array_equal(est.predict(X[:3]), [2, 2, 2])


def test_unknown_parameter_is_rejected(discovery):
    with pytest.raises(ValueError, match="no parameter 'n_trees'"):
        discovery.get("mantis_rf").params({"n_trees": 10})


def test_caches_can_be_cleared():
    clear_cache()
    EMBEDDING_MEMO.clear()
    assert len(EMBEDDING_MEMO) == 0 and EMBEDDING_MEMO.nbytes == 0


def test_auto_runs_where_torch_sees_a_gpu_and_a_method_without_torch_on_the_cpu(monkeypatch):
    """One rule for ``device: auto`` (the worker's device and a plugin's torch device): cuda where torch sees a
    GPU, for a method that computes with torch; a method that does not, or a machine without torch, runs on the
    CPU without loading torch; a named device is kept, and a CUDA request without CUDA is a clear error."""
    import builtins
    import sys

    import torch

    from chorustic.methods import MethodNotReady
    from chorustic.methods.estimators import resolve_device, torch_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == resolve_device(None) == "cuda"
    assert resolve_device("auto", loads_torch=False) == "cpu" and resolve_device("cuda:1", loads_torch=False) == "cuda:1"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu" and torch_device("auto") == torch.device("cpu")
    with pytest.raises(MethodNotReady, match="CUDA is not available; use device 'cpu'"):
        torch_device("cuda")
    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("no torch here")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setattr(builtins, "__import__", no_torch)
    assert resolve_device("auto") == "cpu"

    def forbidden(name, *args, **kwargs):
        assert name != "torch", "a method without torch loaded it to ask for a GPU"
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", forbidden)
    assert resolve_device("auto", loads_torch=False) == "cpu" and "torch" not in sys.modules
