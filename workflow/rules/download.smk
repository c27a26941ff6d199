rule download:
    """Fetch one dataset in the official layout (local copy, aeon wheel, or download with checksums)."""
    output:
        train=f"{DATA_DIR}/{{dataset}}/{{dataset}}_TRAIN.ts",
        test=f"{DATA_DIR}/{{dataset}}/{{dataset}}_TEST.ts",
    params:
        offline="--offline" if config["data"]["offline"] else "",
        mirrors=" ".join(f"--mirror {m}" for m in config["data"].get("mirrors") or []),
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
        "chorustic download {wildcards.dataset} --data-dir {DATA_DIR} {params.offline} "
        "{params.mirrors} --no-progress > {log} 2>&1"
