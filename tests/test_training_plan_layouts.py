"""``chorustic pretrain --plan --choose-layout`` (issue 76, item 2): the planner weighs the training layouts
(activation checkpointing and its signal chunk sizes, each at its largest micro-batch within the budget) by
their expected time on the target (compute-bound or launch-bound, whichever is slower) and chooses the
fastest that fits."""

from __future__ import annotations

import dataclasses
import json

import pytest

from chorustic.cli import main
from chorustic.prior import PriorConfig
from chorustic.testing.training import MICRO
from chorustic.training import TrainConfig
from chorustic.training.plan import LAUNCH_US, layout_candidates, plan_pretraining

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py

PRIOR = PriorConfig(min_rows=12, max_rows=16, min_length=32, max_length=64, max_channels=4, max_classes=3)
#: checkpointing with 8 signal row-episodes a chunk: 16 rows x 4 episodes = 64 row-episodes in 8 chunks
TC = TrainConfig(name="t", steps=10, batch_size=8, micro_batch_size=4, shape_group_size=4, prior=PRIOR,
                 activation_checkpointing=True, signal_chunk_rows=8)
MC = dataclasses.replace(MICRO, freeze_signal_encoder=False)


@pytest.fixture(scope="module")
def plan():
    return plan_pretraining(MC, TC, memory_gb=4.0, choose_layout=True, workers=2)


def test_the_candidates_are_the_configured_layout_larger_signal_chunks_and_no_checkpointing():
    labels = [(label, fields) for label, fields in layout_candidates(MC, TC)]
    assert labels == [("checkpointing, 8 signal rows a chunk (configured)", {}),
                      ("checkpointing, 32 signal rows a chunk", {"signal_chunk_rows": 32}),
                      ("checkpointing, 64 signal rows a chunk", {"signal_chunk_rows": 64}),
                      ("no checkpointing", {"activation_checkpointing": False})]
    plain = dataclasses.replace(TC, activation_checkpointing=False)
    assert [f for _, f in layout_candidates(MC, plain)] == [{}, {"activation_checkpointing": True}]


@pytest.mark.slow(reason="traces a fake step per layout (~12 s, shared by the module)")
def test_fewer_chunks_launch_fewer_kernels_and_recomputation_executes_more_flops(plan):
    rows = plan["layouts"]["candidates"]
    assert all(r["fits"] and r["micro_batch_size"] == 4 for r in rows)
    calls = [r["calls_per_micro_batch"] for r in rows]
    assert calls == sorted(calls, reverse=True) and calls[0] > 3 * calls[-1], calls
    *ckpt, plain = rows
    # the FLOPs counted call by call equal the plan's FLOP model without recomputation, and exceed it with
    assert plain["executed_flops"] == pytest.approx(plain["model_flops"], rel=1e-6)
    assert all(r["executed_flops"] > 1.1 * r["model_flops"] for r in ckpt)
    # the step of each micro-batch is traced at that size (the line through 1 and 2 episodes only proposes it):
    # a chunk of 32 row-episodes holds whole episodes of 1 and 2, two chunks of 4 episodes
    assert all(r["traced_peak_bytes"] <= 0.9 * 4 * 2**30 for r in rows)
    by = {r["label"]: r for r in rows}
    r32 = by["checkpointing, 32 signal rows a chunk"]
    assert r32["traced_peak_bytes"] < 0.8 * r32["estimated_peak_bytes"]
    assert by["no checkpointing"]["traced_peak_bytes"] == pytest.approx(by["no checkpointing"]["estimated_peak_bytes"],
                                                                        rel=0.05)


@pytest.mark.slow(reason="traces a fake step per layout (~12 s, shared by the module)")
def test_each_layout_takes_its_compute_or_its_launches_and_the_fastest_that_fits_is_chosen(plan):
    lay = plan["layouts"]
    peak = 989e12 * 0.4  # an H100's bf16 peak at the plan's default MFU
    for r in lay["candidates"]:
        compute, launches = r["executed_flops"] / peak, r["calls_per_micro_batch"] * LAUNCH_US * 1e-6
        assert r["expected_ms"] == pytest.approx(max(compute, launches) * 1e3, abs=0.01)
        assert r["bound"] == ("launch" if launches > compute else "compute")
        assert r["episodes_per_s"] == pytest.approx(4 / max(compute, launches), rel=0.01)
    best = max(lay["candidates"], key=lambda r: r["episodes_per_s"])
    assert lay["chosen"]["label"] == best["label"] == "no checkpointing"
    assert lay["chosen"]["options"] == "--micro-batch-size 4 --no-activation-checkpointing"


@pytest.mark.slow(reason="a second plan of every layout (~11 s)")
def test_a_tighter_budget_takes_smaller_micro_batches_and_still_the_fastest_that_fits(plan):
    rows = {r["label"]: r for r in plan["layouts"]["candidates"]}
    ckpt, plain = rows["checkpointing, 8 signal rows a chunk (configured)"], rows["no checkpointing"]
    assert plain["traced_peak_bytes"] > 1.5 * ckpt["traced_peak_bytes"]
    gb = ckpt["traced_peak_bytes"] * 1.05 / 0.9 / 2**30  # the configured layout's micro-batch of 4 just fits
    tight = plan_pretraining(MC, TC, memory_gb=gb, choose_layout=True, workers=2)["layouts"]
    fitting = [r for r in tight["candidates"] if r["fits"]]
    assert all(r["traced_peak_bytes"] <= 0.9 * gb * 2**30 for r in fitting)
    by = {r["label"]: r for r in tight["candidates"]}
    assert by[ckpt["label"]]["micro_batch_size"] == 4
    assert not by["no checkpointing"]["fits"] or by["no checkpointing"]["micro_batch_size"] < 4
    chosen = tight["chosen"]
    assert chosen["label"] == max(fitting, key=lambda r: r["episodes_per_s"])["label"]
    if chosen["fields"].get("activation_checkpointing", True):
        assert chosen["options"] == (f"--micro-batch-size {chosen['micro_batch_size']} --activation-checkpointing "
                                     f"--signal-chunk-rows {chosen['layout']['signal_rows']}")


@pytest.mark.slow(reason="two plans from the command line (~15 s)")
def test_the_command_prints_the_layouts_and_takes_the_chosen_options(tmp_path, capsys):
    mcfg, tcfg = tmp_path / "m.json", tmp_path / "t.json"
    mcfg.write_text(json.dumps(MC.to_dict()))
    tcfg.write_text(json.dumps(TC.to_dict()))
    base = ["pretrain", "--plan", "--model-config", str(mcfg), "--train-config", str(tcfg), "--memory-gb", "4"]
    assert main([*base, "--choose-layout", "--signal-chunk-rows", "32"]) == 0
    out = capsys.readouterr()
    printed = json.loads(out.out)
    assert printed["train"]["chunks"]["signal_rows"] == 32  # --signal-chunk-rows reached the plan
    assert printed["layouts"]["candidates"][0]["label"] == "checkpointing, 32 signal rows a chunk (configured)"
    assert "layout no checkpointing: micro-batch 4" in out.err
    assert ("fastest that fits: no checkpointing: chorustic pretrain ... --micro-batch-size 4 "
            "--no-activation-checkpointing") in out.err
    assert main(base) == 0
    assert "layouts" not in json.loads(capsys.readouterr().out)  # only when asked: it traces a step per layout
