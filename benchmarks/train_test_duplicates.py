"""The leakage audit of every dataset under a data root: test series identical to a training series after the
harness's preprocessing (chorustic/data/duplicates.py), one line per dataset, then the affected ones.

    python benchmarks/train_test_duplicates.py --data-root DIR [--cache-dir DIR]

DIR holds archive folders (``UCR/<Name>/<Name>_{TRAIN,TEST}.ts``, ``UEA/...``) or dataset folders directly.
Results: benchmarks/results/train_test_duplicates.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from chorustic.data import load_dataset
from chorustic.data.duplicates import audit_dataset


def dataset_dirs(root: Path) -> list[tuple[Path, str]]:
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        if (d / f"{d.name}_TRAIN.ts").is_file():
            out.append((root, d.name))
        else:
            out += dataset_dirs(d)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", type=Path, required=True)
    ap.add_argument("--cache-dir", type=Path, default=None)
    args = ap.parse_args()
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="audit-cache-"))
    hits, total, t0 = [], 0, time.perf_counter()
    for folder, name in dataset_dirs(args.data_root):
        r = audit_dataset(load_dataset(name, folder, cache_dir=cache, offline=True, series="resampled"))
        total += 1
        print(f"{r['archive']:4} {name:30} {r['n_test_duplicated']:5} of {r['n_test']:6} test series duplicated "
              f"({r['n_same_label']} same label, {r['n_other_label']} other)")
        if r["n_test_duplicated"]:
            hits.append(r)
    print(f"\n{len(hits)} of {total} datasets have test series identical to a training series "
          f"({time.perf_counter() - t0:.1f} s):")
    for r in hits:
        pairs = ", ".join(f"test {j} = train {i}" for j, i in r["examples"][:3])
        print(f"  {r['dataset']}: {r['n_test_duplicated']} of {r['n_test']} ({100 * r['n_test_duplicated'] / r['n_test']:.1f} %), "
              f"{r['n_same_label']} with the same label; e.g. {pairs}")


if __name__ == "__main__":
    main()
