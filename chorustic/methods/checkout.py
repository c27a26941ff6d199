"""Methods run from the authors' code: a checkout of their repository (never vendored here).

UniShape, NuTime and TIC-FM publish code, not packages. Their plugins import the authors' modules from a
folder the user cloned (the ``checkout`` parameter, default :func:`default_checkout_root`
``/<name>``): :func:`resolve_checkout` checks the files a plugin needs; :func:`checkout_imports` imports
the authors' modules from it without leaking their generic top-level package names (``models``,
``utils``, ``src``) into other plugins; :func:`clone_checkout` clones it (``fetch-weights``).

:class:`CheckoutMethod` is the skeleton the three plugins share: where the checkout and its weights are
(:meth:`~CheckoutMethod.resolve`), the readiness check (load the authors' model once), and
``fetch-weights`` (clone, download what else is needed, check). A plugin adds its metadata, its
estimator and how to load the authors' model.
"""

from __future__ import annotations

import abc
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from chorustic.methods.base import Method, MethodNotReady

__all__ = [
    "CheckoutMethod",
    "backbone_state_dict",
    "checkout_imports",
    "clone_checkout",
    "default_checkout_root",
    "resolve_checkout",
]


def default_checkout_root() -> Path:
    """``$CHORUSTIC_CHECKOUTS`` or ``~/.cache/chorustic/checkouts``: where ``fetch-weights`` clones code."""
    env = os.environ.get("CHORUSTIC_CHECKOUTS")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "chorustic" / "checkouts"


def resolve_checkout(
    label: str,
    path: str | os.PathLike | None,
    *,
    default_name: str,
    required: Iterable[str],
    repo_url: str,
    param: str = "checkout",
    fetch_name: str | None = None,
) -> Path:
    """The authors' checkout folder for a plugin; :class:`MethodNotReady` if it is missing or incomplete.

    ``path`` is the config parameter; when None, ``default_checkout_root()/default_name`` is used.
    ``required`` lists files (relative to the checkout) the plugin imports.
    """
    fetch_name = fetch_name or label
    root = Path(path).expanduser() if path not in (None, "") else default_checkout_root() / default_name
    if not root.is_dir():
        raise MethodNotReady(
            f"{label}: no checkout of the authors' code at {root}. Fix: `git clone {repo_url} {root}` "
            f"(or run `chorustic fetch-weights {fetch_name}` on a connected machine), or set "
            f"`params: {{{param}: <path of your clone>}}` for {fetch_name} in the config."
        )
    missing = [r for r in required if not (root / r).exists()]
    if missing:
        raise MethodNotReady(
            f"{label}: the folder {root} is not a checkout of {repo_url}: it lacks {', '.join(missing)}. "
            f"Point `{param}` at a clone of {repo_url}."
        )
    return root


def clone_checkout(
    repo_url: str,
    dest: str | os.PathLike,
    *,
    revision: str | None = None,
    log: Callable[[str], None] | None = None,
) -> Path:
    """``git clone`` ``repo_url`` into ``dest`` (cloned next to it, then renamed: never half-written)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    dest = Path(dest).expanduser()
    if dest.exists():
        log(f"checkout {dest} exists; not cloned again")
        return dest
    git = shutil.which("git")
    if git is None:
        raise MethodNotReady(f"`git` is not installed; clone {repo_url} into {dest} by hand.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        cmd = [git, "clone", "--quiet", repo_url, str(tmp / "repo")]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800)
        if revision:
            subprocess.run(
                [git, "-C", str(tmp / "repo"), "checkout", "--quiet", revision],
                check=True,
                capture_output=True,
                text=True,
                timeout=600,
            )
        os.replace(tmp / "repo", dest)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        raise MethodNotReady(f"cloning {repo_url} into {dest} failed: {detail.strip()[:500]}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"cloned {repo_url} into {dest}")
    return dest


_IMPORT_LOCK = threading.RLock()


@contextlib.contextmanager
def checkout_imports(root: str | os.PathLike, top_level: Sequence[str], *, label: str = "") -> Iterator[None]:
    """Import the authors' modules from ``root`` inside this block.

    ``root`` is put first on ``sys.path``; modules under the generic top-level names ``top_level``
    (for example ``("models", "utils")``) that another checkout imported earlier are set aside, and the
    ones imported here are removed from ``sys.modules`` afterwards (the objects obtained inside the
    block keep working). An ImportError names the checkout and the missing dependency.
    """
    root = str(Path(root).resolve())

    def owned(name: str) -> bool:
        return any(name == t or name.startswith(t + ".") for t in top_level)

    with _IMPORT_LOCK:
        saved = {k: v for k, v in sys.modules.items() if owned(k)}
        for k in saved:
            del sys.modules[k]
        sys.path.insert(0, root)
        try:
            yield
        except ModuleNotFoundError as exc:
            missing = exc.name or str(exc)
            raise MethodNotReady(
                f"{label + ': ' if label else ''}importing the authors' code from {root} needs the Python package "
                f"{missing!r}, which is not installed. Install it into this environment (see the checkout's "
                f"requirements) or use the method's conda environment (workflow/envs/)."
            ) from exc
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(root)
            for k in [k for k in sys.modules if owned(k)]:
                del sys.modules[k]
            sys.modules.update(saved)


class CheckoutMethod(Method):
    """A method whose model is built by the authors' code from a checkout of :attr:`repo_url`.

    Parameters every such plugin has: ``checkout`` (the clone; None: :func:`default_checkout_root`
    ``/`` :attr:`checkout_name`) and ``checkpoint`` (None: :attr:`checkpoint_in_checkout` inside the
    checkout), declared by the estimator's constructor like the plugin's other parameters. The estimator
    receives both as local paths (:meth:`resolve`).
    """

    #: The authors' repository.
    repo_url: ClassVar[str]
    #: The checkout's folder name under :func:`default_checkout_root`.
    checkout_name: ClassVar[str]
    #: Files (relative to the checkout) the plugin imports: a folder without them is not a checkout.
    checkout_files: ClassVar[tuple[str, ...]] = ()
    #: Where the authors' release puts the checkpoint inside the checkout.
    checkpoint_in_checkout: ClassVar[str] = ""
    #: Where the checkpoint comes from, for the message when it is missing.
    checkpoint_source: ClassVar[str] = ""

    def checkout(self, params: dict[str, Any]) -> Path:
        return resolve_checkout(
            self.label,
            params["checkout"],
            default_name=self.checkout_name,
            required=self.checkout_files,
            repo_url=self.repo_url,
            fetch_name=self.info.name,
        )

    def weights(self, params: dict[str, Any], root: Path) -> dict[str, Path]:
        """The weights as local files, by estimator keyword (default: ``checkpoint``, the parameter or the
        file at :attr:`checkpoint_in_checkout`)."""
        ckpt = Path(params["checkpoint"]).expanduser() if params["checkpoint"] else root / self.checkpoint_in_checkout
        if not ckpt.is_file():
            raise MethodNotReady(
                f"{self.label}: checkpoint {ckpt} not found. {self.checkpoint_source} Put it at "
                f"{root / self.checkpoint_in_checkout} or set `params: {{checkpoint: <path>}}` for {self.info.name} "
                "in the config."
            )
        return {"checkpoint": ckpt}

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        root = self.checkout(params)
        return {"checkout": root, **self.weights(params, root)}

    @abc.abstractmethod
    def load(self, params: dict[str, Any], resolved: dict[str, Any]) -> Any:
        """Load the authors' model from the resolved files on the CPU (the readiness check)."""

    def download(self, params: dict[str, Any]) -> list[Path]:
        """Fetch what the checkout does not hold (``fetch-weights``); default: nothing."""
        return []

    def fetch_weights(self, **params: Any) -> list[Path]:
        p = self.params(params)
        dest = Path(p["checkout"]).expanduser() if p["checkout"] else default_checkout_root() / self.checkout_name
        clone_checkout(self.repo_url, dest)
        p = {**p, "checkout": str(dest)}
        self.download(p)
        resolved = self.resolve(p)
        self.load(p, resolved)
        return [resolved["checkout"], *(v for k, v in resolved.items() if k != "checkout")]


def backbone_state_dict(ckpt: Any, label: str) -> dict[str, Any]:
    """The key mapping of a self-supervised save (BYOL, MoCo) onto its encoder, as NuTime's and UniShape's
    ``load_pretrained_model`` do: ``backbone.X`` -> ``X`` (except the ``backbone.fc`` head), the momentum
    encoder, predictor and other ``backbone.``/``fc.`` keys dropped, any other key kept as it is."""
    state = ckpt.get("state_dict", ckpt) if isinstance(ckpt, dict) else None
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise MethodNotReady(f"{label}: the checkpoint holds no state_dict")
    out = {}
    for k, v in state.items():
        if k.startswith("backbone.") and not k.startswith("backbone.fc."):
            out[k[len("backbone."):]] = v
        elif not k.startswith(("backbone.", "fc.")):
            out[k] = v
    return out
