"""Environments: every conda environment of the workflow is pinned by constraints.txt and reaches this
repository through ${CHORUSTIC_REPO} (set by the Snakefile), never a relative path that breaks with a
custom --conda-prefix; requires-python matches the pinned numpy; the container definitions build
environment.yml."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ENVS = sorted((REPO / "workflow" / "envs").glob("*.yaml"))


def _pip(env_file: Path) -> list[str]:
    env = yaml.safe_load(env_file.read_text())
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))


def test_every_environment_is_pinned_and_finds_the_repository_from_anywhere():
    assert len(ENVS) >= 15
    for env_file in ENVS:
        text, pip = env_file.read_text(), _pip(env_file)
        assert "-c ${CHORUSTIC_REPO}/constraints.txt" in pip and "-e ${CHORUSTIC_REPO}" in pip, env_file.name
        assert "../" not in text.replace("# ", ""), f"{env_file.name}: relative path"
        reqs = [r for r in pip if not r.startswith("-")]
        assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][0-9A-Za-z.+\-]*", r) for r in reqs), (
            env_file.name,
            reqs,
        )
    assert 'os.environ["CHORUSTIC_REPO"] = workflow.basedir' in (REPO / "Snakefile").read_text()


def test_pip_expands_the_repository_variable(tmp_path):
    """conda hands the pip section to `pip install -r`; pip expands ${VAR} (no editable build here: that needs
    the network for build isolation)."""
    req = tmp_path / "req.txt"
    req.write_text(
        "\n".join(r for r in _pip(REPO / "workflow" / "envs" / "chorustic.yaml") if not r.startswith("-e"))
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "-r", str(req)],
        capture_output=True,
        text=True,
        env={**os.environ, "CHORUSTIC_REPO": str(REPO)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "-r", str(req)],
        capture_output=True,
        text=True,
        env={**os.environ, "CHORUSTIC_REPO": str(tmp_path)},
    )
    assert bad.returncode != 0 and "constraints.txt" in bad.stdout + bad.stderr  # the variable really is used


def test_requires_python_matches_the_pinned_numpy():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"
    assert re.search(r"^numpy==2\.3\.", (REPO / "constraints.txt").read_text(), re.M)  # numpy 2.3 needs 3.11
    assert "python=3.11" in (REPO / "environment.yml").read_text()


def test_container_definitions_build_environment_yml():
    docker = (REPO / "workflow" / "container" / "Dockerfile").read_text()
    apptainer = (REPO / "workflow" / "container" / "chorustic.def").read_text()
    for text in (docker, apptainer):
        assert "conda env create --file environment.yml" in text
        assert "momentfm==0.1.4" in text
    assert re.search(r"^FROM condaforge/miniforge3:\S+$", docker, re.M)
    assert re.search(r"^Bootstrap: docker\nFrom: condaforge/miniforge3:\S+$", apptainer, re.M)
    for section in ("%files", "%post", "%environment", "%test"):
        assert re.search(rf"^{section}$", apptainer, re.M), section
    files = re.search(r"^%files\n(.*?)\n\n", apptainer, re.S | re.M).group(1).split("\n")
    for line in files:
        assert (REPO / line.split()[0]).exists(), line  # every copied path exists in the repository
    for src in re.findall(r"^COPY (.+) \S+$", docker, re.M):
        for path in src.split():
            assert (REPO / path).exists(), path
    snakefile = (REPO / "Snakefile").read_text()
    assert 'container: config.get("container", "chorustic.sif")' in snakefile
