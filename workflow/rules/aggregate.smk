rule aggregate:
    """Collect every run manifest of this profile into results/accuracies.csv (one row per run)."""
    input:
        MANIFESTS,
    output:
        ACCURACIES,
    conda:
        "../envs/chorustic.yaml"
    resources:
        **cr.rule_resources(config, "aggregate"),
    log:
        f"{LOGS}/aggregate.log",
    script:
        "../scripts/aggregate.py"
