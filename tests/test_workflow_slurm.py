"""The workflow on a real SLURM cluster through workflow/profiles/slurm.

A one-node cluster (workflow/profiles/slurm/local-cluster.sh: Debian's slurmctld, slurmd and munge,
installed with apt-get when missing) runs the demo profile restricted to 2 datasets x 2 methods. Every
job of the DAG must run inside a SLURM job submitted by the executor plugin (the cluster's job
completion log lists exactly the jobs Snakemake submitted, all COMPLETED, each with a time limit,
memory and the partition of the site file), evaluate jobs must ask for the memory their dataset needs,
and results/accuracies.csv must equal a local run's. Never hangs: Snakemake runs under a hard timeout
and is killed with its process group, and the daemons are stopped on every exit path (the fixture's
finally, and a watchdog that stops them when this process dies).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "workflow" / "profiles" / "slurm" / "local-cluster.sh"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
HARD_TIMEOUT_S = 480
DAEMONS = ("slurmctld", "slurmd", "munged", "sbatch", "srun", "squeue", "sinfo", "scancel")

OVERRIDE = {
    "datasets": {"archives": ["UCR", "UEA"], "include": ["GunPoint", "BasicMotions"], "exclude": []},
    "evaluate": ["quant", "chorustic_small"],
    # three contexts instead of sixteen: the point is where the jobs run, not how many contexts
    "protocols": {"full": True, "fixed_shot": {"shots": [5], "seeds": [0]},
                  "proportional": {"percents": [20], "seeds": [0]}},
    "reports": {"reference_method": "quant"},
}
SITE = {"cluster": {"partition": "debug"}}  # a site file, as docs/cluster.md describes


def _ensure_slurm_installed() -> None:
    if all(shutil.which(c) for c in DAEMONS):
        return
    if shutil.which("apt-get") is None:
        pytest.skip("SLURM is not installed and apt-get is not available to install it "
                    "(slurmctld slurmd slurm-client munge)")
    proc = subprocess.run([str(SCRIPT), "install"], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.skip(f"apt-get could not install SLURM (slurmctld slurmd slurm-client munge): "
                    f"{(proc.stdout + proc.stderr)[-1500:]}")
    missing = [c for c in DAEMONS if shutil.which(c) is None]
    assert not missing, f"installed SLURM but {missing} are still missing"


@pytest.fixture
def slurm_cluster():
    if not sys.platform.startswith("linux"):
        pytest.skip("the local SLURM cluster needs Linux")
    if os.geteuid() != 0:
        pytest.skip("starting slurmd (and installing SLURM) needs root")
    _ensure_slurm_installed()
    cluster_dir = Path(tempfile.mkdtemp(prefix="chorustic-slurm-", dir="/tmp"))  # reachable by munge
    try:
        proc = subprocess.run([str(SCRIPT), "start", str(cluster_dir), "--watch", str(os.getpid()),
                               "--max-seconds", str(HARD_TIMEOUT_S + 300)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"local SLURM cluster did not start:\n{proc.stdout}\n{proc.stderr}"
        env = dict(os.environ)
        env["SLURM_CONF"] = str(cluster_dir / "slurm.conf")
        env["PATH"] = os.pathsep.join([str(cluster_dir / "bin"), str(Path(sys.executable).parent), env.get("PATH", "")])
        yield cluster_dir, env
    finally:
        subprocess.run([str(SCRIPT), "stop", str(cluster_dir)], capture_output=True, text=True, timeout=120)
        shutil.rmtree(cluster_dir, ignore_errors=True)


def _workdir(path: Path) -> Path:
    path.mkdir()
    (path / "models").symlink_to(REPO / "models")  # the demo's committed checkpoint, read only
    return path


def _start(args, cwd: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(SNAKEMAKE + args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def _finish(proc: subprocess.Popen, timeout: float) -> str:
    """Output of ``proc``; past ``timeout`` its whole process group is killed (Snakemake waiting on a
    job status it never gets survives SIGTERM) and the test fails with the output so far."""
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out = proc.communicate()[0]
        pytest.fail(f"snakemake did not finish within {timeout:.0f} s and was killed:\n{out[-5000:]}")


def _jobcomp(path: Path) -> list[dict]:
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in path.read_text().splitlines() if line.strip()]


def _tres_mem_mb(tres: str) -> int:
    value, unit = re.search(r"mem=(\d+(?:\.\d+)?)([MGT])", tres).groups()
    return round(float(value) * {"M": 1, "G": 1024, "T": 1024**2}[unit])


def _rules_run_in(log: Path) -> set[tuple[str, str]]:
    """(rule, wildcards) of every job a SLURM job's Snakemake ran."""
    text = log.read_text()
    jobs = set()
    for block in re.split(r"\n(?=\s*rule \w+:)", text):
        m = re.match(r"\s*rule (\w+):", block)
        if m:
            wc = re.search(r"^\s*wildcards: (.*)$", block, re.M)
            jobs.add((m.group(1), wc.group(1) if wc else ""))
    return jobs


@pytest.mark.slow(reason="the demo through a local one-node SLURM cluster, then locally (~150 s)")
@pytest.mark.timeout(HARD_TIMEOUT_S + 240)
def test_demo_runs_through_slurm_and_matches_the_local_run(slurm_cluster, tmp_path, monkeypatch):
    from chorustic import config as cc
    from chorustic import resources as cr

    cluster_dir, env = slurm_cluster
    (tmp_path / "override.yaml").write_text(yaml.safe_dump(OVERRIDE))
    (tmp_path / "site.yaml").write_text(yaml.safe_dump(SITE))
    configs = ["--configfile", str(REPO / "config" / "demo.yaml"), str(tmp_path / "override.yaml")]
    slurm_dir, local_dir = _workdir(tmp_path / "slurm"), _workdir(tmp_path / "local")

    # the local run (default profile) uses the CPU while the SLURM run waits for the scheduler
    local = _start(["-s", str(REPO / "Snakefile"), "-d", str(local_dir), "--cores", "2", *configs], tmp_path, env)
    slurm = _start(["-s", str(REPO / "Snakefile"), "-d", str(slurm_dir),
                    "--workflow-profile", str(REPO / "workflow" / "profiles" / "slurm"),
                    *configs, str(tmp_path / "site.yaml"),
                    "--slurm-no-account",  # this cluster has no accounts (no accounting database)
                    "--slurm-init-seconds-before-status-checks", "1", "--slurm-keep-successful-logs",
                    "--seconds-between-status-checks", "2"],  # Snakemake's default 10 s wait per step of the DAG
                   tmp_path, env)
    slurm_out = _finish(slurm, HARD_TIMEOUT_S)
    local_out = _finish(local, 120)
    assert slurm.returncode == 0, slurm_out[-5000:]
    assert local.returncode == 0, local_out[-5000:]

    # every SLURM job Snakemake submitted ran on the cluster and completed, with time, memory, partition
    run_id = re.search(r"SLURM run ID: (\S+)", slurm_out).group(1)
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)", slurm_out)
    records = {r["JobId"]: r for r in _jobcomp(cluster_dir / "jobcomp.log")}
    assert sorted(records) == sorted(j for j, _ in submitted), (records, submitted)
    for job_id, rec in records.items():
        assert rec["JobState"] == "COMPLETED" and rec["Name"] == run_id and rec["Partition"] == "debug", rec
        assert int(rec["TimeLimit"]) > 0 and _tres_mem_mb(rec["Tres"]) > 0, rec

    # every job of the DAG ran inside one of them; only the target `all` (no command) ran locally
    expected = ({(r, f"dataset={d}") for r in ("download", "preprocess", "contexts", "audit")
                 for d in OVERRIDE["datasets"]["include"]}
                | {("evaluate", f"method={m}, dataset={d}") for m in OVERRIDE["evaluate"]
                   for d in OVERRIDE["datasets"]["include"]}
                | {("aggregate", ""), ("report", "")})
    ran = set()
    for _, log in submitted:
        ran |= _rules_run_in(Path(log))
    assert ran == expected, (ran ^ expected)
    assert re.findall(r"^localrule (\w+):", slurm_out, re.M) == ["all"]

    # each evaluate job asked SLURM for the memory and time its dataset needs, far below the plugins'
    cfg = cc.load_config([REPO / "config" / "demo.yaml", tmp_path / "override.yaml", tmp_path / "site.yaml"])
    monkeypatch.chdir(slurm_dir)  # paths in the config (the demo's checkpoint) are relative to the workdir
    for job_id, log in submitted:
        m = re.search(r"rule_evaluate/([a-z_]+)_([A-Za-z0-9]+)/", log)
        if not m:
            continue
        method, dataset = m.groups()
        want = cr.evaluate_resources(cfg, cc.resolved_entry(cfg, method), dataset)
        rec = records[job_id]
        assert _tres_mem_mb(rec["Tres"]) == want["mem_mb"], (rec, want)
        assert int(rec["TimeLimit"]) == want["runtime"], (rec, want)
        assert want["mem_mb"] <= 4000 < 16000  # the quant and chorustic plugins' 16 GB

    # the same results as the local run
    ignore = ["fit_time_s", "predict_time_s", "peak_memory_mb"]
    on_slurm = pd.read_csv(slurm_dir / "results" / "accuracies.csv").drop(columns=ignore)
    here = pd.read_csv(local_dir / "results" / "accuracies.csv").drop(columns=ignore)
    assert len(on_slurm) == 2 * 2 * 3 and (on_slurm.status == "ok").all(), on_slurm
    pd.testing.assert_frame_equal(on_slurm, here)
    assert (slurm_dir / "reports" / "README.md").is_file()
