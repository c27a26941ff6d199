"""Snakemake script of the aggregate rule: thin glue (log and exit status: run_script)."""
from chorustic.evaluation.snakemake_glue import aggregate_from_snakemake, run_script

run_script(snakemake, aggregate_from_snakemake)  # noqa: F821 (injected by Snakemake)
