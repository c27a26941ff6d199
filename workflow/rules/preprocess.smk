rule preprocess:
    """Read the .ts files, resample to length 512 (and keep native arrays); cache them on disk."""
    input:
        rules.download.output,
    output:
        f"{CACHE_DIR}/summaries/{{dataset}}.json",
    conda:
        "../envs/chorustic.yaml"
    resources:
        **per_job(DATASET_RESOURCES["preprocess"], lambda w: w.dataset),
    log:
        f"{LOGS}/preprocess/{{dataset}}.log",
    benchmark:
        f"{LOGS}/benchmarks/preprocess/{{dataset}}.tsv"
    shell:
        "chorustic preprocess {wildcards.dataset} --data-dir {DATA_DIR} --cache-dir {CACHE_DIR} "
        "--offline --no-progress --json {output} > {log} 2>&1"
