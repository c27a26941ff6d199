"""The pretraining pipeline: a worker-generated stream that does not depend on workers or ranks,
data-parallel training with torchrun equal to one process, and the --plan measurements."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from chorustic.cli import main
from chorustic.model import ChorusTIC
from chorustic.prior import PriorConfig
from chorustic.training import TrainConfig
from chorustic.training.data import EpisodeStream, StreamLayout, make_loader
from chorustic.training.trainer import PriorSchedule
from chorustic.testing.training import MICRO

PRIOR = PriorConfig(min_rows=12, max_rows=16, min_length=32, max_length=64, max_channels=4, max_classes=3)


pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


def _stream(cfg: TrainConfig, world: int = 1, rank: int = 0, start: int = 0, stop: int = 3) -> EpisodeStream:
    return EpisodeStream(cfg, StreamLayout.of(cfg, world), prior_at=PriorSchedule(cfg, MICRO.seq_len, 10),
                         num_groups=MICRO.num_groups, group_size=MICRO.group_size, rank=rank,
                         start_step=start, stop_step=stop)


def _key(mb):
    return (mb.step, mb.index, mb.X.numpy().tobytes(), mb.y_context.numpy().tobytes(),
            mb.y_query.numpy().tobytes(), mb.group_idx.numpy().tobytes(), mb.plan.slot_src.numpy().tobytes())


CFG = TrainConfig(name="t", steps=3, batch_size=8, micro_batch_size=2, shape_group_size=4, prior=PRIOR, seed=5)


def test_the_stream_does_not_depend_on_the_number_of_workers():
    ref = [_key(mb) for mb in make_loader(_stream(CFG), num_workers=0, pin_memory=False)]
    assert len(ref) == 3 * 4 and [k[:2] for k in ref[:5]] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    for workers in (1, 2):
        got = [_key(mb) for mb in make_loader(_stream(CFG), num_workers=workers, pin_memory=False)]
        assert got == ref, workers


def test_ranks_partition_the_stream_and_shape_groups_share_shapes():
    one = [_key(mb) for mb in _stream(CFG)]
    r0 = [_key(mb) for mb in _stream(CFG, world=2, rank=0)]
    r1 = [_key(mb) for mb in _stream(CFG, world=2, rank=1)]
    assert sorted(r0 + r1) == sorted(one)
    assert {k[1] for k in r0} == {0, 2} and {k[1] for k in r1} == {1, 3}
    mbs = list(_stream(CFG))
    shapes = [(mb.step, mb.index // 2, tuple(mb.X.shape[1:2]), mb.y_context.shape[1]) for mb in mbs]
    for s in range(3):  # micro-batches 0,1 form shape group 0 and 2,3 group 1
        assert shapes[4 * s][2:] == shapes[4 * s + 1][2:] and shapes[4 * s + 2][2:] == shapes[4 * s + 3][2:]
    # a resumed stream regenerates exactly the same micro-batches
    assert [_key(mb) for mb in _stream(CFG, start=2)] == one[8:]


def test_layout_errors_name_the_fix():
    with pytest.raises(ValueError, match="must divide shape_group_size"):
        TrainConfig(batch_size=8, micro_batch_size=3, shape_group_size=4)
    with pytest.raises(ValueError, match="multiple of the number of processes"):
        StreamLayout(batch_size=8, shape_group_size=4, micro_batch_size=4, world_size=3)
    assert StreamLayout(36, 12, 3, 4).accumulation_steps == 3


def test_prior_workers_by_device_and_processes_per_node(monkeypatch):
    from chorustic.training.data import auto_workers

    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(16)), raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert auto_workers(torch.device("cuda")) == 15
    assert auto_workers(torch.device("cpu")) == 1
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # torchrun: 4 processes share the node's cores
    assert auto_workers(torch.device("cuda")) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(256)), raising=False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    assert auto_workers(torch.device("cuda")) == 32


def test_step_layout_by_device():
    """A GPU runs each stage in one pass unless checkpointing chunks it; a CPU always runs cache-sized chunks
    (the smaller of those and the checkpointing chunks)."""
    from chorustic.model.signal_encoder import GROUP_CHUNK
    from chorustic.training.config import CPU_CHUNKS

    plain = TrainConfig.small()
    assert plain.forward_kwargs("cuda") == {"recompute": False, "signal_rows": None, "cdm_columns": None,
                                            "interaction_rows": None, "group_chunk": None}
    assert plain.forward_kwargs("cpu") == {"recompute": False, "signal_rows": None, "group_chunk": GROUP_CHUNK,
                                           **CPU_CHUNKS}
    ckpt = TrainConfig.paper()
    assert ckpt.forward_kwargs("cuda") == {"recompute": True, "signal_rows": 64, "cdm_columns": 1024,
                                           "interaction_rows": 512, "group_chunk": None}
    cpu = ckpt.forward_kwargs("cpu")
    assert cpu["cdm_columns"] == min(1024, CPU_CHUNKS["cdm_columns"]) and cpu["group_chunk"] == GROUP_CHUNK


def test_a_window_sized_schedule_ends_with_the_run():
    """``TrainConfig.sized_to``: a GPU window of N steps keeps the preset's recipe with its schedule ending at
    step N (warm-up and curriculum in proportion); a run that continues an earlier window's weights warms
    up briefly and skips the curriculum; a model is exported at least four times in the run."""
    base = TrainConfig.preset("base")
    first = base.sized_to(600)
    assert (first.steps, first.warmup_steps, first.curriculum_steps) == (600, 30, 100)
    assert first.checkpoint_every == 150 and first.val_every == 150
    assert (first.lr, first.batch_size, first.prior, first.schedule) == (base.lr, base.batch_size, base.prior, "cosine")
    later = base.sized_to(600, continued=True)
    assert (later.warmup_steps, later.curriculum_steps) == (12, 0)
    assert base.sized_to(10_000, continued=True).warmup_steps == 50
    assert base.sized_to(12_000).warmup_steps == base.warmup_steps  # never longer than the preset's recipe
    assert base.sized_to(64).checkpoint_every == 16
    assert base.sized_to(0).steps == 1


@pytest.mark.slow(reason="two torchrun ranks and one process train the same steps (~30 s)")
def test_torchrun_two_processes_train_the_same_model_as_one(tmp_path):
    """DDP (gloo) over 2 processes, the global batch split across ranks, equals one process."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    common = ["--model-config", "tiny", "--train-config", "tiny", "--steps", "3", "--device", "cpu",
              "--threads", "1", "--no-progress", "--workers", "0"]
    one = subprocess.run([sys.executable, "-m", "chorustic", "pretrain", *common, "--out-dir", str(tmp_path / "one")],
                         env=env, capture_output=True, text=True, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                          "-m", "chorustic", "pretrain", *common, "--out-dir", str(tmp_path / "two")],
                         env=env, capture_output=True, text=True, timeout=600)
    assert two.returncode == 0, two.stderr[-3000:]
    a, b = load_file(str(tmp_path / "one" / "model.safetensors")), load_file(str(tmp_path / "two" / "model.safetensors"))
    assert a.keys() == b.keys()
    assert max(float((a[k].float() - b[k].float()).abs().max()) for k in a) <= 1e-4
    info = json.loads((tmp_path / "two" / "run.json").read_text())
    assert info["world_size"] == 2
    logs = [json.loads(x) for x in (tmp_path / "two" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logs if r["kind"] == "val"] == [0, 3]  # rank 0 alone validates and logs


_DDP_COMPILE_SCRIPT = """
import copy, dataclasses, json, sys
import torch
from torch.nn.parallel import DistributedDataParallel
from chorustic.model import ChorusTICConfig
from chorustic.model.signal_encoder import plan_slots
from chorustic.testing.checkpoints import randomized_chorustic
from chorustic.training import TrainConfig
from chorustic.training.distributed import context_from_env
from chorustic.training.trainer import _PretrainForward

torch.set_num_threads(1)
ctx = context_from_env(torch.device("cpu"))
cfg = dataclasses.replace(ChorusTICConfig.small(), seq_len=32, num_patches=4, icl_num_blocks=1)
model = randomized_chorustic(cfg, scale=0.05).train()
reference = copy.deepcopy(model)

def inputs(rank):
    g = torch.Generator().manual_seed(rank)
    X = torch.randn(2, 10, 3, cfg.seq_len, generator=g)
    gi = reference.sample_assignment(torch.ones(2, 3, dtype=torch.bool), generator=g)
    return X, torch.arange(6).remainder(3).repeat(2, 1), plan_slots(gi, True)

fwd = _PretrainForward(model, dataclasses.replace(TrainConfig.tiny(), compile=True), "cpu")
# only the signal encoder's chunk (the graph that failed), compiled with aot_eager (the graphs inductor gets,
# without a C++ compiler); the stages the mapping leaves out run eager, which keeps the test short
fwd.stages = {"encode_chunk": model.compile_stages(backend="aot_eager")["encode_chunk"]}
ddp = DistributedDataParallel(fwd, broadcast_buffers=False)
ddp(*inputs(ctx.rank)).float().square().mean().backward()  # DDP averages the two ranks' gradients
if ctx.rank == 0:
    eager = _PretrainForward(reference, TrainConfig.tiny(), "cpu")
    for r in range(ctx.world_size):
        (eager(*inputs(r)).float().square().mean() / ctx.world_size).backward()
    diff = max(float((a.grad - b.grad).abs().max() / (b.grad.abs().max() + 1e-12))
               for a, b in zip(model.parameters(), reference.parameters()) if b.grad is not None)
    json.dump({"max_rel_diff": diff}, open(sys.argv[1], "w"))
ctx.shutdown()
"""


@pytest.mark.slow(reason="two torchrun ranks compile the stages and train (~70 s)")
def test_compiled_stages_train_under_ddp(tmp_path):
    """``--compile`` with torchrun: a compiled stage runs inside the DDP-wrapped step (dynamo's DDP graph
    splitter, meant for compiling a whole DDP module, is off for the stages: it failed on the signal
    encoder's graph) and the averaged gradients of 2 gloo processes equal the eager gradients of both
    processes' episodes."""
    script = tmp_path / "ddp_compile.py"
    script.write_text(_DDP_COMPILE_SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                          str(script), str(tmp_path / "out.json")], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads((tmp_path / "out.json").read_text())["max_rel_diff"] < 1e-4


@pytest.mark.slow(reason="runs the real training step under torch's flop counter (~25 s)")
def test_plan_measures_flops_and_memory_of_the_real_step(tmp_path, capsys):
    """--plan on fake tensors: FLOPs equal a real FlopCounterMode count of a real micro-batch, and the
    peak-memory estimate is close to the storages a real step keeps alive."""
    from chorustic.model.attention import kernels_of
    from chorustic.training.plan import _LiveStorages, _plan_of, fit_flop_model, flop_counter, plan_pretraining

    mc = MICRO
    tc = TrainConfig(name="t", steps=10, batch_size=4, micro_batch_size=2, shape_group_size=4, prior=PRIOR)
    flop_model = fit_flop_model(mc, tc)
    torch.manual_seed(0)
    model = ChorusTIC(mc).train()
    plan = _plan_of(mc, 2, 14, 3, dedupe=True)
    X, y = torch.randn(2, 14, 3, mc.seq_len), torch.arange(6).remainder(3).repeat(2, 1)
    counter, live = flop_counter(), _LiveStorages()
    with counter, live:
        model.episode_logits(X, y, plan=plan).float().logsumexp(-1).sum().backward()
    assert flop_model.micro_batch(2, 14, 6, plan) == pytest.approx(counter.get_total_flops(), rel=1e-3)
    sdpa = [k for k in counter.get_flop_counts()["Global"] if "scaled_dot_product" in str(k)]
    assert sdpa, "attention FLOPs must be counted on CPU too"

    # float32, as the real step below; the measurements on 2 worker processes, then all in this process
    plan_json = plan_pretraining(mc, tc, memory_gb=1.0, amp_dtype=None, workers=2)
    serial = plan_pretraining(mc, tc, memory_gb=1.0, amp_dtype=None, workers=1)
    assert {**serial, "plan_seconds": None} == {**plan_json, "plan_seconds": None}
    assert plan_json["model"]["parameters_total"] == sum(p.numel() for p in model.parameters())
    assert plan_json["flops_per_episode"]["fit_relative_error_at_largest"] < 1e-3
    mem = plan_json["memory"]
    assert mem["micro_batch_size"] == 4 and mem["gradient_accumulation"] == 1  # the largest that fits
    by_mb = {c["micro_batch_size"]: c for c in mem["candidates"]}
    assert sorted(by_mb) == [1, 2, 4] and by_mb[4]["estimated_peak_gb"] > by_mb[1]["estimated_peak_gb"]
    t = plan_json["time"]
    assert t["estimated_seconds"] == pytest.approx(10 * 4 * plan_json["flops_per_episode"]["prior_mean"]
                                                   / (989e12 * 0.4), rel=0.01)
    # the fake measurement of one largest micro-batch vs the real one (same storages, real tensors)
    largest = plan_json["largest_episode"]
    X = torch.randn(2, largest["rows"], largest["channels"], mc.seq_len)
    y = torch.arange(largest["context_rows"]).remainder(3).repeat(2, 1)
    plan = _plan_of(mc, 2, largest["rows"], largest["channels"], dedupe=True)
    live = _LiveStorages()
    for p in model.parameters():
        p.grad = torch.zeros_like(p)  # as in training: gradients are accumulated in place
    with live, kernels_of("cuda"):  # the kernels the plan traced for its GPU target
        model.episode_logits(X, y, plan=plan).float().logsumexp(-1).sum().backward()
    assert live.peak == pytest.approx(by_mb[2]["activation_peak_bytes"], rel=0.1)

    mcfg = tmp_path / "m.json"
    mcfg.write_text(json.dumps(mc.to_dict()))
    tcfg = tmp_path / "t.json"
    tcfg.write_text(json.dumps(tc.to_dict()))
    assert main(["pretrain", "--plan", "--model-config", str(mcfg), "--train-config", str(tcfg),
                 "--memory-gb", "16", "--gpu", "a100"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["time"]["peak_tflops"] == 312.0 and printed["memory"]["budget_gb"] == 16


@pytest.mark.slow(reason="a real pretraining run stopped and resumed (~15 s)")
def test_sigterm_to_the_process_group_saves_the_state_and_resume_continues(tmp_path):
    """``kill`` of the whole process group (Ctrl-C, SLURM's time limit) reaches the prior workers too: they
    leave the stop to the training process, which finishes its step, saves its state and exits cleanly."""
    import signal
    import time

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "chorustic", "pretrain", "--model-config", "tiny", "--train-config", "tiny",
           "--device", "cpu", "--threads", "1", "--no-progress", "--workers", "1", "--steps", "100000",
           "--log-every", "1", "--checkpoint-every", "100000", "--val-every", "100000", "--out-dir", str(out)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    log = out / "log.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and sum('"train"' in x for x in log.read_text().splitlines()) >= 2:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    os.killpg(proc.pid, signal.SIGTERM)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    assert "DataLoader worker" not in stderr
    stopped = json.loads((out / "summary.json").read_text())["step"]
    assert stopped >= 2
    states = sorted((out / "state").glob("step_*.pt"))
    assert states and states[-1].name == f"step_{stopped:07d}.pt"  # the state of the step it stopped after
    resume = [*cmd[:cmd.index("--steps")], "--resume", "--steps", str(stopped + 2), "--out-dir", str(out)]
    again = subprocess.run(resume, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["step"] == stopped + 2


def test_the_flop_model_adds_its_stages_and_the_counter_counts_cpu_attention():
    import torch
    import torch.nn.functional as F

    from chorustic.training.plan import FlopModel, flop_counter

    fm = FlopModel(tokenize=2.0, encode=(3.0, 5.0), compose=7.0, task=(1.0, 10.0, 100.0, 1000.0),
                   tokenize_call=11.0, signal_rows=8)
    assert fm.signal_calls(episodes=4, rows=10) == 5  # 8 // 4 = 2 rows a chunk
    assert fm.signal_row(pairs=3, items={1: 2, 2: 1}, episodes=2) == 2 * 3 + 3 * 2 + 5 + 7 * 2
    assert fm.task_episode(rows=2, context_rows=3) == 1 + 20 + 300 + 6000
    q = torch.randn(1, 2, 16, 8)
    with flop_counter() as counter:
        F.scaled_dot_product_attention(q, q, q)
    # QK^T and AV, each 2 heads x 2 m n k (0 if the CPU flash kernel were not registered)
    assert counter.get_total_flops() == 2 * 2 * (2 * 16 * 16 * 8)
