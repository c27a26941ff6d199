"""The paper's tables and figures, and the reproduction check against the published numbers.

Entry point: :func:`build_report` (the ``chorustic report`` command). Modules:

* :mod:`~chorustic.reports.accuracies`   reading ``results/accuracies.csv`` into per-(archive, protocol)
  accuracy matrices, with missing runs and ineligible datasets accounted for
* :mod:`~chorustic.reports.layout`       the paper's group/method order, ablation variants
* :mod:`~chorustic.reports.tables`       Tables 1-4, per-dataset and statistical comparison tables
* :mod:`~chorustic.reports.render`       LaTeX (booktabs) / Markdown / CSV rendering
* :mod:`~chorustic.reports.figures`      Figure 2, critical-difference diagrams, scatter and violin plots
* :mod:`~chorustic.reports.paper`        the paper's numbers (``results/reference``)
* :mod:`~chorustic.reports.reproduction` the paper-table self-check and the comparison with the paper
* :mod:`~chorustic.reports.writeup`      the reproduction report
* :mod:`~chorustic.reports.build`        the whole report
"""

from chorustic.lazy_imports import lazy_getattr

#: Where each name lives, imported on first use (PEP 562): the workflow reads ``catalog`` without matplotlib.
_HOMES = {"ReportConfig": "build", "ReportResult": "build", "build_report": "build"}

__getattr__ = lazy_getattr(__name__, _HOMES)


__all__ = ["ReportConfig", "ReportResult", "build_report"]
