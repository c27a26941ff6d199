rule preprocess:
    """Read the .ts files, resample to length 512 (and keep native arrays); cache them on disk."""
    input:
        rules.download.output,
    output:
        f"{CACHE_DIR}/summaries/{{dataset}}.json",
    params:
        # accepting modified files changes what is accepted and recorded: a change re-runs the step
        allow=lambda w: "--allow-modified-data" if cc.allow_modified_data(config, w.dataset) else "",
    conda:
        "../envs/chorustic.yaml"
    resources:
        **per_job(DATASET_RESOURCES["preprocess"], lambda w: w.dataset),
    log:
        f"{LOGS}/preprocess/{{dataset}}.log",
    benchmark:
        f"{LOGS}/benchmarks/preprocess/{{dataset}}.tsv"
    shell:
        "chorustic preprocess --datasets {wildcards.dataset} --data-dir {DATA_DIR:q} --cache-dir {CACHE_DIR:q} "
        "--offline --no-progress {DATA_LOCK_ARG} {params.allow} --out {output:q} > {log:q} 2>&1"
