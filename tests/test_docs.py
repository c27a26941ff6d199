"""The documentation's commands run as printed, and its links resolve, so a renamed option or a moved file
breaks the test suite, not a reader.

**Which blocks run.** README.md and docs/**/*.md mark a fenced block with an HTML comment on the line right
before its fence (markdown-it parses the pages, so a block inside a list item works too; GitHub does not
show the comment):

    <!-- runnable -->                       run the block as printed
    <!-- runnable: dry-run -->              run it as a dry run (below)
    <!-- runnable: in=examples/demo -->     run it in that folder of the checkout (default: its root)
    <!-- runnable: in=run -->               run it in a copy of a small real run: results/ and
                                            reports/aeon/ of one MiniRocket job on GunPoint, protocols
                                            full and fixed5 (tests/conftest.py)
    <!-- runnable: file=baselines/x.py -->  do not run it: write it to that path of the checkout, where
                                            the page's later blocks find it
    <!-- runnable: dry-run slow -->         and mark the test slow (a block that takes more than ~20 s)

Options combine. Languages: ```bash (one bash script with `set -euo pipefail`; a line ending in a
backslash continues) and ```python (executed by this interpreter, in this process); a `file=` block may also
be ```yaml (a config file the page's later commands read). A marker not right
before a fence is an error. A block without a marker never runs: the Quick start's install commands,
commands that need root, a GPU, the internet or a finished run, and templates with placeholders.

**Where.** Every block runs in a fresh copy of the repository's files (tracked, and untracked but not
ignored: `git ls-files`), so nothing it writes lands in the checkout. The environment is the test's, with
this interpreter's `bin` first on PATH (the `chorustic` and `snakemake` of this environment), and
`CHORUSTIC_BASELINES=<copy>/baselines`, `HF_HUB_OFFLINE=1`, `MPLBACKEND=Agg`.

**Dry run**, line by line, for commands whose real run takes long:

* `snakemake ARGS` runs as `snakemake -n ARGS`: the profile, the configuration and the whole DAG are
  built, no job runs;
* `chorustic ...`, `python [-m MODULE | SCRIPT] ...` and `torchrun ... (-m MODULE | SCRIPT) ...` are parsed
  by the command's own argument parser and not run (`argparse.ArgumentParser.parse_args` stops after
  parsing; torchrun's own options go through torch's parser): an unknown or renamed option, a wrong type
  or an invalid choice fails the test;
* any other line (`cp`, `echo`) runs as printed.

Prefer a real quick invocation (a plain `runnable`) wherever one exists.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from chorustic.testing.workflow import command_env

REPO = Path(__file__).resolve().parents[1]
#: Pages whose marked blocks run and whose links must resolve.
DOC_PAGES = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md"))]
#: Hand-written pages next to the code whose links must resolve too.
LINKED_PAGES = [
    "models/chorustic-small/README.md",
    "models/chorustic-base/README.md",
    "experiments/README.md",
    "benchmarks/README.md",
    *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "benchmarks" / "results").glob("*.md")),
    "examples/demo/README.md",
    "results/README.md",
    "tools/gpu/README.md",
]
MARKER = re.compile(r"^\s*<!--\s*runnable(?::\s*(?P<opts>[^>]*?))?\s*-->\s*$")
FLAGS, VALUES = ("dry-run", "slow"), ("in", "file")
PARSE_ONLY = ("chorustic", "python", "python3", "torchrun")
SHELL_OPERATORS = {"&&", "||", ";", "|", "&"}
URL = re.compile(r"^[a-z][a-z0-9+.-]*:")  # http:, https:, mailto:


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the fence
    lang: str
    code: str
    dry_run: bool = False
    slow: bool = False
    cwd: str = "."
    file: str | None = None
    earlier_files: list[Block] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _parse(path: Path):
    return MarkdownIt("commonmark").parse(path.read_text())


def _options(text: str | None, where: str) -> dict[str, str | bool]:
    opts: dict[str, str | bool] = {}
    for word in (text or "").split():
        key, _, value = word.partition("=")
        if not ((key in FLAGS and not value) or (key in VALUES and value)):
            raise ValueError(f"{where}: unknown runnable option {word!r} (dry-run, slow, in=DIR, file=PATH)")
        opts[key] = value or True
    return opts


#: Pages that build on another page's files: their blocks find that page's ``file=`` blocks first (the
#: method page continues the README's flat_logreg example).
CONTINUES = {"docs/adding-a-method.md": "README.md"}


def _file_blocks(page: str) -> list[Block]:
    return [f for b in runnable_blocks(page) for f in b.earlier_files] if page else []


def runnable_blocks(page: str) -> list[Block]:
    """The marked fenced blocks of a page, in order, each with the page's earlier ``file=`` blocks (after
    those of the page it continues, :data:`CONTINUES`)."""
    tokens = _parse(REPO / page)
    blocks: list[Block] = []
    files: list[Block] = list({f.file: f for f in _file_blocks(CONTINUES.get(page, ""))}.values())
    for i, tok in enumerate(tokens):
        lines = tok.content.strip().splitlines() if tok.type == "html_block" else []
        m = MARKER.match(lines[-1]) if lines else None
        if not m:
            continue
        where = f"{page}:{tok.map[1]}"
        fence = tokens[i + 1] if i + 1 < len(tokens) else None
        if fence is None or fence.type != "fence" or fence.map[0] != tok.map[1]:
            raise ValueError(f"{where}: a runnable marker must be the line right before a fenced block")
        opts = _options(m.group("opts"), where)
        lang = (fence.info.split() or [""])[0]
        if lang not in ("bash", "python") and not (lang == "yaml" and "file" in opts):
            raise ValueError(f"{where}: a runnable block is ```bash or ```python (or a ```yaml file=PATH), "
                             f"not {lang!r}")
        block = Block(page, fence.map[0] + 1, lang, fence.content, dry_run=bool(opts.get("dry-run")),
                      slow=bool(opts.get("slow")), cwd=str(opts.get("in", ".")),
                      file=str(opts["file"]) if "file" in opts else None, earlier_files=list(files))
        (files if block.file else blocks).append(block)
    return blocks


def _all_blocks() -> list[Block]:
    return [b for page in DOC_PAGES for b in runnable_blocks(page)]


# --- the checkout copy -----------------------------------------------------------------------------------


def _repo_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=REPO, capture_output=True, check=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: all but what a run writes
        skip = {".git", ".venv", "data", "logs", "runs", ".snakemake", "__pycache__", ".pytest_cache"}
        return [p.relative_to(REPO).as_posix() for p in REPO.rglob("*")
                if not skip & set(p.relative_to(REPO).parts) and (p.is_file() or p.is_symlink())]


def copy_checkout(dst: Path) -> Path:
    for rel in _repo_files():
        src, out = REPO / rel, dst / rel
        if not (src.is_file() or src.is_symlink()):
            continue  # deleted in the working tree, or a submodule
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            out.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, out)
    return dst


# --- dry runs ---------------------------------------------------------------------------------------------


class _Parsed(Exception):
    pass


def parse_only(words: list[str], cwd: Path) -> argparse.Namespace:
    """Parse a command line with the command's own argparse parser, in this process, without running it."""
    original = argparse.ArgumentParser.parse_args

    def no_abbreviations(parser):  # the docs spell options in full; a renamed option's old prefix fails
        parser.allow_abbrev = False
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    no_abbreviations(sub)

    def parse_args(self, args=None, namespace=None):
        no_abbreviations(self)
        raise _Parsed(original(self, args, namespace))

    saved_argv, saved_path, saved_cwd = sys.argv, list(sys.path), os.getcwd()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            prog, args = words[0], words[1:]
            if prog == "torchrun":
                from torch.distributed.run import get_args_parser

                ns = original(get_args_parser(), args)  # torchrun's own options
                kind = "module" if ns.module else "script"
                target, args = ns.training_script, ns.training_script_args
            elif prog == "chorustic":
                kind, target = "module", "chorustic"
            elif args[:1] == ["-m"]:
                kind, target, args = "module", args[1], args[2:]
            else:
                kind, target, args = "script", args[0], args[1:]
            argparse.ArgumentParser.parse_args = parse_args
            os.chdir(cwd)
            sys.argv = [target, *args]
            if kind == "module":
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(str(cwd / target), run_name="__main__")
    except _Parsed as parsed:
        return parsed.args[0]
    except SystemExit as exc:
        command = shlex.join(words)
        raise AssertionError(f"`{command}` does not parse (exit {exc.code}):\n{err.getvalue()}") from None
    finally:
        argparse.ArgumentParser.parse_args = original
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
    raise AssertionError(f"`{shlex.join(words)}` finished without parsing its arguments")


def dry_run_script(code: str, cwd: Path) -> str:
    """The bash script of a dry-run block: `snakemake` lines get `-n`, the commands of PARSE_ONLY are
    parsed here and dropped, other lines are kept."""
    kept = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "snakemake":
            kept.append("snakemake -n" + line.split("snakemake", 1)[1])
        elif words and words[0] in PARSE_ONLY:
            assert not SHELL_OPERATORS & set(words), f"one command per line in a dry-run block: {line}"
            parse_only(words, cwd)
        else:
            kept.append(line)
    return "\n".join(kept)


# --- the tests --------------------------------------------------------------------------------------------


@pytest.fixture
def checkout(monkeypatch, tmp_path):
    copy = copy_checkout(tmp_path / "checkout")
    extra = {"CHORUSTIC_BASELINES": str(copy / "baselines"), "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    for key, value in extra.items():
        monkeypatch.setenv(key, value)
    return copy, command_env(**extra)


@pytest.mark.parametrize(
    "block", [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.slow else []) for b in _all_blocks()]
)
def test_runnable_block_runs_as_printed(block, checkout, request, tmp_path, monkeypatch):
    copy, environ = checkout
    for f in block.earlier_files:
        (copy / f.file).parent.mkdir(parents=True, exist_ok=True)
        (copy / f.file).write_text(f.code)
    if block.cwd == "run":
        run = request.getfixturevalue("minirocket_gunpoint_run")[0]
        cwd = Path(shutil.copytree(run, tmp_path / "run", ignore=shutil.ignore_patterns("raw", "cache")))
    else:
        cwd = copy / block.cwd
        assert cwd.is_dir(), f"{block.id}: in={block.cwd} is not a folder of the repository"
    if block.lang == "python":
        assert not block.dry_run, f"{block.id}: a python block runs for real"
        monkeypatch.chdir(cwd)
        try:
            exec(compile(block.code, block.id, "exec"), {"__name__": "__main__"})
        finally:
            if "matplotlib.pyplot" in sys.modules:
                sys.modules["matplotlib.pyplot"].close("all")
        return
    script = dry_run_script(block.code, cwd) if block.dry_run else block.code
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=600)
    output = f"{script}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"{block.id} failed (exit {proc.returncode}):\n{output}"
    if "snakemake -n" in script:
        assert "This was a dry-run" in proc.stdout + proc.stderr, output


def test_the_pages_mark_their_commands():
    blocks = _all_blocks()
    pages = {b.page for b in blocks}
    assert {"README.md", "docs/results.md", "docs/pretraining.md", "docs/cluster.md"} <= pages
    assert any(b.lang == "python" and b.cwd == "run" for b in blocks)  # tsml-eval on a real run
    assert any(b.lang == "python" and b.cwd == "examples/demo" for b in blocks)  # aeon on the demo's outputs
    check = [b for b in runnable_blocks("README.md") if "chorustic check-method --methods flat_logreg" in b.code]
    assert check and [f.file for f in check[0].earlier_files] == ["baselines/flat_logreg.py"]


def test_a_dry_run_catches_a_renamed_option():
    parse_only(["chorustic", "pretrain", "--plan", "--model-config", "tiny"], REPO)
    with pytest.raises(AssertionError, match="--model-cfg"):
        parse_only(["chorustic", "pretrain", "--plan", "--model-cfg", "tiny"], REPO)
    with pytest.raises(AssertionError, match="does not parse"):
        parse_only(["python", "benchmarks/pretrain_throughput.py", "--stepz", "3"], REPO)
    with pytest.raises(AssertionError, match="--memory"):  # an abbreviation of --memory-gb
        parse_only(["chorustic", "pretrain", "--plan", "--memory", "32"], REPO)
    with pytest.raises(AssertionError, match="does not parse"):
        parse_only(["torchrun", "--nproc-per-gpu", "2", "-m", "chorustic", "methods"], REPO)
    assert dry_run_script("snakemake --cores all  # the paper\necho done", REPO) == (
        "snakemake -n --cores all  # the paper\necho done"
    )


def test_quick_start_is_the_first_block_and_ci_runs_its_test_line():
    first = next(t for t in _parse(REPO / "README.md") if t.type == "fence")
    assert first.info.strip() == "bash"
    demo, tests = first.content.strip().splitlines()
    install = demo.rsplit(" && ", 1)[0]
    assert demo == install + " && snakemake --cores all --workflow-profile workflow/profiles/demo"
    assert tests == install + " && python -m pytest"
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert [ln for ln in ci if ln and not ln.startswith(("#", "set ", "cd "))] == [tests]


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading (lower case, punctuation dropped, spaces to hyphens)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> Iterator[str]:
    tokens = _parse(page)
    seen: dict[str, int] = {}
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            slug = _slug(tokens[i + 1].content)
            seen[slug] = seen.get(slug, -1) + 1
            yield slug if seen[slug] == 0 else f"{slug}-{seen[slug]}"


def _links(tokens):
    for tok in tokens:
        if tok.type == "inline":
            yield from _links(tok.children or [])
        elif tok.type == "link_open":
            yield tok.attrs.get("href", "")
        elif tok.type == "image":
            yield tok.attrs.get("src", "")


@pytest.mark.parametrize("page", DOC_PAGES + LINKED_PAGES)
def test_relative_links_resolve(page):
    path = REPO / page
    broken = []
    for href in _links(_parse(path)):
        if URL.match(href):
            continue
        target, _, anchor = href.partition("#")
        dest = (path.parent / target).resolve() if target else path
        if not dest.exists():
            broken.append(f"{href}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in set(_anchors(dest)):
            broken.append(f"{href}: no heading #{anchor} in {dest.name}")
    assert not broken, f"{page}: {broken}"


def test_every_docs_page_is_linked_from_an_index():
    linked = set()
    for index in (REPO / "README.md", REPO / "docs" / "README.md"):
        for href in _links(_parse(index)):
            if not URL.match(href) and href.partition("#")[0]:
                linked.add((index.parent / href.partition("#")[0]).resolve())
    unlinked = sorted(p.name for p in (REPO / "docs").glob("*.md") if p.resolve() not in linked)
    assert not unlinked, f"docs pages no index links to: {unlinked}"
