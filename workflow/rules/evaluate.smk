rule evaluate:
    """One method on one dataset under every protocol context (supervised worker; failures recorded)."""
    input:
        contexts=rules.contexts.output,
        summary=rules.preprocess.output,
        checkpoint=method_checkpoint_inputs,
    output:
        f"{RESULTS}/runs/{{method}}/{{dataset}}.json",
    conda:
        lambda w: method_conda_env(w.method)
    log:
        f"{LOGS}/evaluate/{{method}}/{{dataset}}.log",
    benchmark:
        f"{LOGS}/benchmarks/evaluate/{{method}}/{{dataset}}.tsv"
    threads: lambda w: EVALUATE_RESOURCES[(w.method, w.dataset)]["threads"]
    resources:
        **per_job(EVALUATE_RESOURCES, lambda w: (w.method, w.dataset)),
    script:
        "../scripts/evaluate.py"
