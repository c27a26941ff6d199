# ChorusTIC benchmark DAG.
#   paper profile (default):  snakemake --cores all
#   demo profile (offline):   snakemake --cores all --workflow-profile workflow/profiles/demo
# download -> preprocess -> contexts -> evaluate (method x dataset) -> aggregate -> report,
# plus pretrain (ChorusTIC checkpoints) feeding the evaluations that use them.
import os
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

# The conda environments (workflow/envs/*.yaml) install this repository from here: pip expands
# ${CHORUSTIC_REPO} in their requirement lines, so they work with any --conda-prefix or working directory.
os.environ["CHORUSTIC_REPO"] = workflow.basedir


# The repository's config (paths inside it are relative to the working directory, by default the
# repository itself; `snakemake -d DIR` puts data/, results/, reports/ ... under DIR).
configfile: str(Path(workflow.basedir) / "config" / "config.yaml")
# (validated once, with the cross-references a schema cannot express: workflow/rules/common.smk)


# `snakemake --sdm apptainer`: every job runs in this image (workflow/container/, config key `container`).
container: config.get("container", "chorustic.sif")


# `snakemake --report report.html`: one self-contained HTML with every table and figure (rule report).
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/preprocess.smk"
include: "workflow/rules/contexts.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/pretrain.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/report.smk"


# When any job failed: the tables and reports are still written from everything that finished, with
# every run that did not as a failed row naming the reason; Snakemake still exits non-zero, and the
# next run retries exactly what failed (chorustic.evaluation.snakemake_glue).
onerror:
    from chorustic.evaluation.snakemake_glue import tables_after_failure

    tables_after_failure(
        config,
        steps=[
            ("download", rules.download.output[0], rules.download.log[0]),
            ("preprocess", rules.preprocess.output[0], rules.preprocess.log[0]),
            ("contexts", rules.contexts.output[0], rules.contexts.log[0]),
            ("pretrain", rules.pretrain.output[0], rules.pretrain.log[0]),
        ],
        evaluate_log=rules.evaluate.log[0],
        report_log=rules.report.log[0],
    )


# The run manifests are requested directly (not only through the aggregate table), so that a lost
# manifest is re-made even when the table is newer (nothing a run writes is tracked by git: the outputs
# of one demo run are committed in examples/demo/). The datasets' records
# are requested too: a dataset file edited after it was recorded (its record set aside) is read again
# and everything made from it re-made.
rule all:
    input:
        SOURCES,
        MANIFESTS,
        ACCURACIES,
        REPORT_INDEX,
    default_target: True
