"""Snakemake script of the aggregate rule: thin glue around chorustic.evaluation (log and exit status in run_script)."""
from chorustic.evaluation.snakemake_glue import aggregate_from_snakemake, run_script

run_script(snakemake, aggregate_from_snakemake)  # noqa: F821 (injected by Snakemake)
