rule download:
    """Provide one dataset in the official layout (local copy, aeon wheel, or download with checksums).

    The output is a record of where the dataset's files are and their checksums, never the files: a
    rule's outputs are deleted by Snakemake before it runs, and a user's data is never deleted. An
    edited, replaced or removed file sets the record aside when the DAG is built (common.smk), which
    re-runs this rule and everything made from the dataset.
    """
    output:
        SOURCE_RECORD,
    params:
        offline="--offline" if config["data"]["offline"] else "",
        mirrors=" ".join(f"--mirror {shlex.quote(m)}" for m in config["data"].get("mirrors") or []),
    conda:
        "../envs/chorustic.yaml"
    log:
        f"{LOGS}/download/{{dataset}}.log",
    benchmark:
        f"{LOGS}/benchmarks/download/{{dataset}}.tsv"
    resources:
        downloads=1,
        **per_job(DATASET_RESOURCES["download"], lambda w: w.dataset),
    shell:
        "chorustic download --datasets {wildcards.dataset} --data-dir {DATA_DIR:q} {params.offline} {DATA_LOCK_ARG} "
        "{params.mirrors} --no-progress --record {output:q} > {log:q} 2>&1"
