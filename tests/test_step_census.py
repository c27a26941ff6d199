"""benchmarks/step_census.py: the operator census of a training micro-batch (fast, ``tiny`` preset)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "step_census.py"
_spec = importlib.util.spec_from_file_location("step_census", _PATH)
sc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sc)

pytestmark = pytest.mark.slow(reason="three fake-tensor censuses of whole training steps, about 15 s together")

SHAPE = (24, 12, 4, 4)  # T, N_c, C, K
CKPT = {"activation_checkpointing": True, "signal_chunk_rows": 8}


@pytest.fixture(scope="module")
def base():
    return sc.census("tiny", episodes=2, shape=SHAPE, overrides=CKPT)


def test_every_stage_and_phase_counted(base):
    for stage in ("signal", "column", "row", "icl"):
        assert base["by_stage"][f"forward/{stage}"] > 0
        assert base["by_stage"][f"backward/{stage}"] > 0
        if stage != "icl":  # ICL block recomputation runs in the tabicl package: counted in backward/icl
            assert base["by_stage"][f"recompute/{stage}"] > 0
    for phase in ("forward", "recompute", "loss", "backward", "clip", "optimizer"):
        assert base["by_phase"][phase] > 0
    assert base["foreach_adamw_calls"] > 0


def test_phases_sum_to_total(base):
    ph = base["by_phase"]
    micro = ph["forward"] + ph["recompute"] + ph["loss"] + ph["backward"]
    assert base["micro_batch_calls"] == micro
    assert sum(base["by_stage"].values()) == micro + ph["clip"] + ph["optimizer"]
    assert base["calls_per_micro_batch"] == pytest.approx(micro + base["step_calls"] / base["micro_batches_per_step"])
    assert base["flops_executed"] == pytest.approx(base["flop_counter_total"])  # = FlopCounterMode's total
    assert 0 < base["flops_model"] < base["flops_executed"]  # recomputation excluded from model FLOPs


def test_signal_chunks_multiply_calls(base):
    halved = sc.census("tiny", episodes=2, shape=SHAPE, overrides={**CKPT, "signal_chunk_rows": 4})
    assert halved["trips"]["signal chunks (signal_rows)"] == 2 * base["trips"]["signal chunks (signal_rows)"]
    sig = lambda r: r["by_stage"]["forward/signal"]  # noqa: E731
    assert sig(halved) > 1.8 * sig(base)
    assert halved["calls_per_micro_batch"] > base["calls_per_micro_batch"]


def test_launch_floor_arithmetic():
    assert sc.launch_floor_s(6000) == pytest.approx(0.03)
    assert sc.compute_time_s(396e12) == pytest.approx(396 / (989 * 0.4))
    assert sc.compute_time_s(0.4 * 989e12) == pytest.approx(1.0)
