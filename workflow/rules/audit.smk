rule audit:
    """The leakage audit of one dataset's splits: test series identical to a training series after
    preprocessing (collected by the aggregate step into results/audit/duplicates.csv)."""
    input:
        rules.preprocess.output,
    output:
        f"{RESULTS}/audit/{{dataset}}.json",
    params:
        # accepting modified files changes what is accepted and recorded: a change re-runs the step
        allow=lambda w: "--allow-modified-data" if cc.allow_modified_data(config, w.dataset) else "",
    conda:
        "../envs/chorustic.yaml"
    resources:
        **per_job(DATASET_RESOURCES["preprocess"], lambda w: w.dataset),  # it reads less than preprocess
    log:
        f"{LOGS}/audit/{{dataset}}.log",
    shell:
        "chorustic audit --datasets {wildcards.dataset} --config {RUN_CONFIG:q} --data-dir {DATA_DIR:q} "
        "--cache-dir {CACHE_DIR:q} {DATA_LOCK_ARG} {params.allow} --out {output:q} > {log:q} 2>&1"
