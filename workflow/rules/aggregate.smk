rule aggregate:
    """Collect every run manifest of this profile into results/accuracies.csv (one row per run), after
    verifying each prediction file against the checksum its manifest recorded."""
    input:
        MANIFESTS,
    output:
        ACCURACIES,
        f"{ACCURACIES}.sha256",
    conda:
        "../envs/chorustic.yaml"
    resources:
        **cr.rule_resources(config, "aggregate"),
    log:
        f"{LOGS}/aggregate.log",
    shell:
        "chorustic aggregate --config {RUN_CONFIG:q} --out {output[0]:q} > {log:q} 2>&1"
