rule aggregate:
    """Collect every run manifest of this profile into results/accuracies.csv (one row per run), after
    verifying each prediction file against the checksum its manifest recorded; and every run's measures
    (accuracy, balanced accuracy, macro F1, AUROC, log loss) from its prediction file into metrics.csv, and
    the audit of every dataset's splits into audit/duplicates.csv."""
    input:
        MANIFESTS,
        AUDITS,
    output:
        ACCURACIES,
        f"{ACCURACIES}.sha256",
        METRICS_TABLE,
        DUPLICATES_TABLE,
    conda:
        "../envs/chorustic.yaml"
    resources:
        **cr.rule_resources(config, "aggregate"),
    log:
        f"{LOGS}/aggregate.log",
    shell:
        "chorustic aggregate --config {RUN_CONFIG:q} --out {output[0]:q} > {log:q} 2>&1"
