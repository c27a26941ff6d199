rule download:
    """Provide one dataset in the official layout (local copy, aeon wheel, or download with checksums).

    The output is a record of where the dataset's files are and their checksums, never the files: a
    rule's outputs are deleted by Snakemake before it runs, and a user's data is never deleted. An
    edited, replaced or removed file re-runs the rule (params.rerun) and everything made from it.
    """
    output:
        f"{CACHE_DIR}/sources/{{dataset}}.json",
    params:
        offline="--offline" if config["data"]["offline"] else "",
        mirrors=" ".join(f"--mirror {m}" for m in config["data"].get("mirrors") or []),
        lock=DATA_LOCK_ARG,
        rerun=lambda w: source_rerun_token(f"{CACHE_DIR}/sources/{w.dataset}.json"),
    conda:
        "../envs/chorustic.yaml"
    log:
        f"{LOGS}/download/{{dataset}}.log",
    benchmark:
        f"{LOGS}/benchmarks/download/{{dataset}}.tsv"
    resources:
        downloads=1,
    shell:
        "chorustic download {wildcards.dataset} --data-dir {DATA_DIR} {params.offline} {params.lock} "
        "{params.mirrors} --no-progress --record {output} --rerun-token={params.rerun:q} > {log} 2>&1"
