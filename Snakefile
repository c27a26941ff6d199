# ChorusTIC benchmark DAG.
#   paper profile (default):  snakemake --cores all
#   demo profile (offline):   snakemake --cores all --workflow-profile workflow/profiles/demo
# download -> preprocess -> contexts -> evaluate (method x dataset) -> aggregate -> report,
# plus pretrain (ChorusTIC checkpoints) feeding the evaluations that use them.
import os
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")

# The conda environments (workflow/envs/*.yaml) install this repository from here: pip expands
# ${CHORUSTIC_REPO} in their requirement lines, so they work with any --conda-prefix or working directory.
os.environ["CHORUSTIC_REPO"] = workflow.basedir


# The repository's config (paths inside it are relative to the working directory, by default the
# repository itself; `snakemake -d DIR` puts data/, results/, reports/ ... under DIR).
configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


validate(config, str(Path(workflow.basedir) / "workflow" / "schema" / "config.schema.yaml"))


# `snakemake --sdm apptainer`: every job runs in this image (workflow/container/, config key `container`).
container: config.get("container", "chorustic.sif")


# `snakemake --report report.html`: one self-contained HTML with every table and figure (rule report).
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/preprocess.smk"
include: "workflow/rules/contexts.smk"
include: "workflow/rules/pretrain.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/report.smk"


# The run manifests are requested directly (not only through the aggregate table), so that a lost
# manifest is re-made even when the table is newer. Nothing a run writes is tracked by git (the outputs
# of one demo run are committed in examples/demo/).
rule all:
    input:
        MANIFESTS,
        ACCURACIES,
        REPORT_INDEX,
    default_target: True
