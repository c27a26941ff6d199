"""Snakemake script of the evaluate rule: thin glue (log and exit status: run_script)."""
from chorustic.evaluation.snakemake_glue import evaluate_from_snakemake, run_script

run_script(snakemake, evaluate_from_snakemake)  # noqa: F821 (injected by Snakemake)
