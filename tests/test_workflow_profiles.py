"""Snakemake profiles: the paper profile's defaults (workflow/profiles/default) apply to the plain
`snakemake` command and to `snakemake -s <repo>/Snakefile -d <dir>` from anywhere, shown by running the
real Snakemake on a fresh copy of the workflow; the SLURM profile's dry run of the paper profile asks
every job for a time limit, memory and partition, and GPUs only where the site has them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from chorustic.testing.workflow import run_snakemake

REPO = Path(__file__).resolve().parents[1]
PROFILE_LINE = "Using workflow specific profile {} for setting default command line arguments."


def _run(args, cwd, timeout=300):
    proc = run_snakemake(*args, cwd=cwd, timeout=timeout)
    return proc, proc.stdout + proc.stderr


def _fresh_copy(dest: Path) -> Path:
    """The workflow as a clone has it: the tracked files (symlinks kept as symlinks)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "Snakefile", "profiles", "workflow", "config"],
                             cwd=REPO, capture_output=True, check=True, timeout=60).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
    if not files:  # not a git checkout: the same paths from the file system
        files = [str(p.relative_to(REPO)) for top in ("Snakefile", "profiles", "workflow", "config")
                 for p in ([REPO / top] if not (REPO / top).is_dir() or (REPO / top).is_symlink()
                           else sorted(q for q in (REPO / top).rglob("*") if not q.is_dir()))]
    assert "profiles" in files, "the `profiles` link (-> workflow/profiles) is not part of the repository"
    for f in files:
        src, dst = REPO / f, dest / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)
    return dest


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory):
    return _fresh_copy(tmp_path_factory.mktemp("clone"))


def _small_config(path: Path, datasets, **extra) -> Path:
    # one method: the paper profile's UEA-only ablations would have no dataset among these (a config error)
    cfg = {"datasets": {"archives": ["UCR", "UEA"], "include": list(datasets), "exclude": []},
           "evaluate": ["minirocket"], "reports": {"reference_method": "minirocket"}, **extra}
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.slow
def test_plain_snakemake_uses_the_default_profile(workflow_copy, tmp_path):
    small = _small_config(tmp_path / "small.yaml", ["GunPoint"])
    proc, out = _run(["-n", "--cores", "1", "--configfile", str(small)], cwd=workflow_copy)
    assert proc.returncode == 0, out[-3000:]
    assert PROFILE_LINE.format("profiles/default") in out
    assert "Shell command: chorustic download --datasets GunPoint" in out  # printshellcmds, from the profile
    assert re.search(r"resources: .*local_gpus=", out)
    # the control: without the profile Snakemake prints neither
    proc, out = _run(["-n", "--cores", "1", "--configfile", str(small), "--workflow-profile", "none"],
                     cwd=workflow_copy)
    assert proc.returncode == 0, out[-3000:]
    assert "workflow specific profile" not in out and "Shell command:" not in out


@pytest.mark.slow
def test_default_profile_applies_with_snakefile_and_directory_from_elsewhere(workflow_copy, tmp_path):
    """`snakemake -s <repo>/Snakefile -d <dir>` run from another directory: Snakemake finds the profile
    next to the Snakefile, and a real run reports the profile's resources (one GPU job at a time, four
    downloads) and runs a job."""
    elsewhere, work = tmp_path / "elsewhere", tmp_path / "work"
    elsewhere.mkdir()
    small = _small_config(tmp_path / "small.yaml", ["GunPoint"], data={"offline": True})
    proc, out = _run(["--cores", "1", "-s", str(workflow_copy / "Snakefile"), "-d", str(work),
                      "--configfile", str(small), "--until", "download"], cwd=elsewhere)
    assert proc.returncode == 0, out[-3000:]
    assert PROFILE_LINE.format(workflow_copy / "profiles" / "default") in out
    provided = re.search(r"^Provided resources: (.*)$", out, re.M)
    assert provided, out[-3000:]
    # Snakemake 9 prints `name=Resource("name", value)`, older releases `name=value`
    limits = dict(re.findall(r'(\w+)=(?:Resource\("\w+", )?(\d+)', provided.group(1)))
    assert limits.get("local_gpus") == "1" and limits.get("downloads") == "4", provided.group(0)
    assert (work / "data" / "raw" / "GunPoint" / "GunPoint_TRAIN.ts").is_file()


# ------------------------------------------------------------------------------------------------
# the SLURM profile on the paper profile (dry run: nothing is submitted)

SITE = {
    "cluster": {"partition": "compute", "gpu_partition": "gpu", "account": "proj42", "gpus": True,
                "gpu_model": "a100", "max_mem_mb": 250000},
    "methods": {"tabicl": {"resources": {"mem_mb": 64000, "partition": "bigmem"}}},
    "pretrain": {"chorustic": {"gpus": 4}},
}


def _jobs(out: str) -> list[dict]:
    """Every job of a dry run: rule, wildcards and resources."""
    jobs = []
    for block in re.split(r"\n(?=\s*(?:local)?rule \w+:)", out):
        m = re.match(r"\s*(?:local)?rule (\w+):", block)
        if not m:
            continue
        res = re.search(r"^\s*resources: (.*)$", block, re.M)
        wc = re.search(r"^\s*wildcards: (.*)$", block, re.M)
        jobs.append({
            "rule": m.group(1),
            "wildcards": dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {},
            "resources": dict(kv.split("=", 1) for kv in res.group(1).split(", ")) if res else {},
        })
    return jobs


@pytest.fixture(scope="module")
def slurm_paper_dry_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("slurm_dry")
    (tmp / "site.yaml").write_text(yaml.safe_dump(SITE))
    proc, out = _run(["-n", "-p", "-s", str(REPO / "Snakefile"), "-d", str(tmp),
                      "--workflow-profile", str(REPO / "workflow" / "profiles" / "slurm"),
                      "--configfile", str(REPO / "config" / "config.yaml"), str(tmp / "site.yaml")], cwd=tmp)
    assert proc.returncode == 0, out[-4000:]
    return out, _jobs(out)


@pytest.mark.slow
def test_slurm_dry_run_gives_every_job_time_memory_and_partition(slurm_paper_dry_run):
    out, jobs = slurm_paper_dry_run
    assert PROFILE_LINE.format(REPO / "workflow" / "profiles" / "slurm") in out
    jobs = [j for j in jobs if j["rule"] != "all"]
    by_rule = {}
    for j in jobs:
        by_rule.setdefault(j["rule"], []).append(j)
    counts = {r: len(v) for r, v in by_rule.items()}
    assert counts.pop("evaluate") > 2000
    assert counts == {"download": 158, "preprocess": 158, "contexts": 158, "audit": 158, "pretrain": 4, "aggregate": 1,
                      "report": 1}
    for j in jobs:
        r = j["resources"]
        assert int(r["runtime"]) > 0 and int(r["mem_mb"]) > 0, j
        assert r.get("slurm_account") == "proj42", j
        gpu = int(r.get("gpu", 0))
        expected = ("bigmem" if j["wildcards"].get("method") == "tabicl" else "gpu" if gpu else "compute")
        assert r.get("slurm_partition") == expected, j
        assert int(r["mem_mb"]) <= 250000


@pytest.mark.slow
def test_slurm_dry_run_gpu_requests_follow_the_site_and_the_plugins(slurm_paper_dry_run):
    from chorustic import config as cc
    from chorustic.methods import discover

    _, jobs = slurm_paper_dry_run
    cfg = cc.load_config()
    methods = discover().methods
    for j in jobs:
        r = j["resources"]
        if j["rule"] == "evaluate":
            plugin = methods[cc.method_entry(cfg, j["wildcards"]["method"])["plugin"]]
            wants = getattr(plugin, "resources", {}).get("gpu", 0)  # a reported method computes nothing
            assert int(r.get("gpu", 0)) == wants, j
        elif j["rule"] == "pretrain":
            want = 4 if j["wildcards"]["run"] == "chorustic" else 1
            assert int(r["gpu"]) == want and r["gpu_model"] == "a100" and r["tasks_per_gpu"] == "0", j
        else:
            assert "gpu" not in r and "gres" not in r, j
        if int(r.get("gpu", 0)):
            assert r["gpu_model"] == "a100" and r["tasks_per_gpu"] == "0"
    # the 4-GPU run starts one data-parallel process per GPU; the others one process
    out = slurm_paper_dry_run[0]
    launches = re.findall(r"^\s*(?:Shell command: )?(.*) pretrain --model-config \S+ .*--out-dir models/(\w+) ", out,
                          re.M)
    assert sorted(launches) == sorted([("torchrun --standalone --nproc-per-node 4 -m chorustic", "chorustic")]
                                      + [("chorustic", r) for r in ("chorustic_no_channel_attention",
                                                                    "chorustic_no_calibration",
                                                                    "chorustic_no_cross_channel_rules")]), launches


@pytest.mark.slow
def test_slurm_dry_run_memory_follows_the_dataset(slurm_paper_dry_run):
    """Evaluate jobs ask for what their dataset needs under the method's cost model, with the plugin's
    numbers as the ceiling: a small dataset asks for a fraction of the plugin's memory."""
    from chorustic import config as cc
    from chorustic import resources as cr
    from chorustic.methods import discover

    _, jobs = slurm_paper_dry_run
    cfg = cc.deep_merge(cc.load_config(), SITE)
    methods = discover().methods
    seen = {}
    for j in jobs:
        if j["rule"] != "evaluate":
            continue
        m, d = j["wildcards"]["method"], j["wildcards"]["dataset"]
        plugin = methods[cc.method_entry(cfg, m)["plugin"]]
        expected = cr.evaluate_resources(cfg, cc.resolved_entry(cfg, m), d, plugin)
        assert int(j["resources"]["mem_mb"]) == expected["mem_mb"], j
        assert int(j["resources"]["runtime"]) == expected["runtime"], j
        if m != "tabicl" and hasattr(plugin, "resources"):
            assert expected["mem_mb"] <= plugin.resources["mem_mb"]
            assert expected["runtime"] <= plugin.resources["runtime"]
        seen[(m, d)] = expected["mem_mb"]
    # MiniRocket and MultiRocket-Hydra: the plugins' 16 GB / 32 GB only for the datasets that need them
    for m, cap in (("minirocket", 16000), ("multirocket_hydra", 32000)):
        assert seen[(m, "GunPoint")] <= cap / 8
        assert seen[(m, "GunPoint")] < seen[(m, "ElectricDevices")] <= cap
    assert seen[("tabicl", "GunPoint")] == 64000  # the site's fixed override
