"""ChorusTIC benchmark and reproducibility harness.

Subpackages, one per concern:

* ``chorustic.data``        archive registry, download, ``.ts`` loading, preprocessing (paper App. C.2)
* ``chorustic.protocols``   full-context, fixed-shot and proportional protocols (paper Sec. 4.1, App. C.1)
* ``chorustic.methods``     the method contract and the plugin discovery of ``baselines/``
* ``chorustic.evaluation``  running one method on one dataset under every context; tsml result files
* ``chorustic.model``       the ChorusTIC architecture (paper Sec. 3, App. B)
* ``chorustic.inference``   deployment-time inference: ensembles, hierarchical many-class extension
* ``chorustic.prior``       the labeled multivariate episodic prior (paper Sec. 3.3, App. B.8)
* ``chorustic.training``    episodic pretraining
* ``chorustic.stats``       accuracy, ranks, win/tie/loss, Wilcoxon + Holm (paper App. C.5)
* ``chorustic.reports``     the paper's tables and figures, reproduction check
"""

__version__ = "0.1.0"
