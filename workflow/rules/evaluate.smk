rule evaluate:
    """One method on one dataset under every protocol context (supervised worker; failures recorded)."""
    input:
        contexts=rules.contexts.output,
        summary=rules.preprocess.output,
        checkpoint=lambda w: PLAN.job(w.method, w.dataset).checkpoint_inputs,
    output:
        str(manifest_path(RESULTS, "{method}", "{dataset}")),
    params:
        # Snakemake's params trigger re-runs the job when the method's parameters or code change (a
        # damaged manifest or prediction file is set aside when the DAG is built: common.smk).
        fingerprint=lambda w: PLAN.job(w.method, w.dataset).fingerprint,
    conda:
        lambda w: method_conda_env(w.method, w.dataset)
    log:
        f"{LOGS}/evaluate/{{method}}/{{dataset}}.log",
    benchmark:
        f"{LOGS}/benchmarks/evaluate/{{method}}/{{dataset}}.tsv"
    threads: lambda w: PLAN.job(w.method, w.dataset).threads
    resources:
        **per_job(EVALUATE_RESOURCES, lambda w: (w.method, w.dataset)),
    shell:
        # every path quoted (:q): a folder name with spaces, quotes or any other character stays one argument.
        # The job's runtime is a limit only under a cluster scheduler (chorustic.resources.evaluation_limits).
        "chorustic evaluate --config {RUN_CONFIG:q} --methods {wildcards.method} --datasets {wildcards.dataset} "
        "--contexts {input.contexts:q} --threads {threads} --mem-mb {resources.mem_mb} "
        "--cluster-runtime {resources.runtime} > {log:q} 2>&1"
