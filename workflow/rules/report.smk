rule report:
    """Statistics, the paper's tables and figures, and the reproduction check against the paper."""
    input:
        ACCURACIES,
    output:
        REPORT_INDEX,
    params:
        reference=config["reports"].get("reference_method", "chorustic"),
    conda:
        "../envs/chorustic.yaml"
    resources:
        **cr.rule_resources(config, "report"),
    log:
        f"{LOGS}/report.log",
    shell:
        "chorustic report --results {RESULTS} --out {REPORTS} --reference {params.reference} > {log} 2>&1"
