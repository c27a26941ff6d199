from chorustic.reports import catalog as report_catalog


def report_folder(folder):
    """A report folder as a rule output, shown by `snakemake --report` (categories and labels from
    chorustic.reports.catalog, captions from workflow/report/<folder>.rst)."""
    return report(
        directory(f"{REPORTS}/{folder}"),
        patterns=[f"{{name}}.{report_catalog.FOLDERS[folder]}"],
        caption=f"../report/{folder}.rst",
        category=lambda w: report_catalog.category(folder, w),
        subcategory=lambda w: report_catalog.subcategory(folder, w),
        labels=lambda w: report_catalog.labels(folder, w),
    )


rule report:
    """Statistics, the paper's tables and figures, and the reproduction check against the paper."""
    input:
        ACCURACIES,
        METRICS_TABLE,
        reference_results=REFERENCE_RESULTS_TABLE,
    output:
        index=REPORT_INDEX,
        tables=report_folder("tables"),
        figures=report_folder("figures"),
        overview=report_folder("overview"),
        reproduction=report_folder("reproduction"),
    params:
        reference=config["reports"].get("reference_method", "chorustic"),
        reference_results=REFERENCE_RESULTS_ARG,
        metrics=" ".join(config["reports"].get("metrics", ["accuracy"])),
    conda:
        "../envs/chorustic.yaml"
    resources:
        **cr.rule_resources(config, "report"),
    log:
        f"{LOGS}/report.log",
    shell:
        "chorustic report --results-dir {RESULTS:q} --reports-dir {REPORTS:q} --reference-method {params.reference:q} "
        "--metrics {params.metrics} {params.reference_results} > {log:q} 2>&1"
