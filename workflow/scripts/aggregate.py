"""Snakemake script of the aggregate rule: thin glue around chorustic.evaluation."""
import sys

from chorustic.evaluation.snakemake_glue import aggregate_from_snakemake

with open(snakemake.log[0], "w") as _log:  # noqa: F821 (injected by Snakemake)
    sys.stderr = sys.stdout = _log
    aggregate_from_snakemake(snakemake)  # noqa: F821
