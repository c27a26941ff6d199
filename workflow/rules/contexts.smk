rule contexts:
    """Write every protocol's context indices for one dataset, once; every method reads this file."""
    input:
        rules.preprocess.output,
    output:
        str(contexts_path(RESULTS, "{dataset}")),
    params:
        protocols=json.dumps(config["protocols"]),
        # accepting modified files changes what is accepted and recorded: a change re-runs the step
        allow=lambda w: "--allow-modified-data" if cc.allow_modified_data(config, w.dataset) else "",
    conda:
        "../envs/chorustic.yaml"
    resources:
        **per_job(DATASET_RESOURCES["contexts"], lambda w: w.dataset),
    log:
        f"{LOGS}/contexts/{{dataset}}.log",
    shell:
        "chorustic contexts --datasets {wildcards.dataset} --config {RUN_CONFIG:q} --data-dir {DATA_DIR:q} --cache-dir {CACHE_DIR:q} "
        "{DATA_LOCK_ARG} {params.allow} --out {output:q} > {log:q} 2>&1"
