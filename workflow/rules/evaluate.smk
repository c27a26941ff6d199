rule evaluate:
    """One method on one dataset under every protocol context (supervised worker; failures recorded)."""
    input:
        contexts=rules.contexts.output,
        summary=rules.preprocess.output,
        checkpoint=method_checkpoint_inputs,
    output:
        f"{RESULTS}/runs/{{method}}/{{dataset}}.json",
    params:
        # Snakemake's params trigger re-runs the job when the method's parameters or code change ...
        fingerprint=lambda w: FINGERPRINTS[w.method],
        # ... or when its manifest or a prediction file it lists is missing, truncated or edited.
        rerun=lambda w: rerun_token(f"{RESULTS}/runs/{w.method}/{w.dataset}.json"),
    conda:
        lambda w: method_conda_env(w.method)
    log:
        f"{LOGS}/evaluate/{{method}}/{{dataset}}.log",
    benchmark:
        f"{LOGS}/benchmarks/evaluate/{{method}}/{{dataset}}.tsv"
    threads: lambda w: method_resources(w.method)["threads"]
    resources:
        mem_mb=lambda w: method_resources(w.method)["mem_mb"],
        runtime=lambda w: method_resources(w.method)["runtime"],
        gpu=lambda w: method_resources(w.method)["gpu"],
    script:
        "../scripts/evaluate.py"
