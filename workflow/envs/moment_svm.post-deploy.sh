#!/usr/bin/env bash
# Snakemake runs this after creating the conda env of workflow/envs/moment_svm.yaml.
# momentfm pins numpy 1.25 / transformers 4.33 but works with current versions; a conda
# requirement list cannot say --no-deps, so it is installed here.
set -euo pipefail
pip install --no-deps momentfm==0.1.4
