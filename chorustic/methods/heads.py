"""The lightweight classifiers fitted on frozen embeddings (the Frozen-TSFM baselines' heads)."""

from __future__ import annotations

import numpy as np

__all__ = ["MomentSVMHead", "make_head"]


class MomentSVMHead:
    """MOMENT's own classification protocol on frozen embeddings: ``momentfm``'s ``fit_svm``.

    ``fit_svm`` grid-searches an RBF SVC over C with 5-fold CV unless the context is tiny (< 50 cases or
    < 5 per class: a single SVC with C=1e5), and subsamples contexts above 10000 cases. Its grid search
    asks joblib for 10 worker processes whatever the job's threads (each a Python with numpy and
    scikit-learn: FordA's full context at 3 % reached 2.1 GB where one process holds 1.3): the search runs
    in this process instead, one fit after another (joblib's sequential backend; its threading backend would
    still start 10 threads, since momentfm names the number). The same fits, so the same model: the job's
    threads go to the encoder, which is most of its time. The SVC has no probability model;
    probabilities are a softmax of its one-vs-rest decision values, fixed up so that their argmax is always
    the SVC's prediction.
    """

    def fit(self, Z: np.ndarray, y: np.ndarray) -> MomentSVMHead:
        from joblib import parallel_config
        from momentfm.models.statistical_classifiers import fit_svm

        with parallel_config(backend="sequential"):
            self.svm_ = fit_svm(Z, y)
        self.classes_ = self.svm_.classes_
        return self

    def predict_proba(self, Z: np.ndarray) -> np.ndarray:
        k = len(self.classes_)
        scores = np.asarray(self.svm_.decision_function(Z), dtype=np.float64)
        if scores.ndim == 1:  # binary: positive -> classes_[1]
            scores = np.stack([-scores, scores], axis=1) / 2.0
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        proba = e / e.sum(axis=1, keepdims=True)
        pred = self.svm_.predict(Z)
        idx = np.searchsorted(self.classes_, pred)
        wrong = np.argmax(proba, axis=1) != idx
        if np.any(wrong):
            proba[wrong] = np.eye(k)[idx[wrong]]
        return proba


def make_head(kind: str, *, seed: int, n_jobs: int = 1, n_estimators: int = 200, lr_max_iter: int = 1000):
    """The lightweight classifier fitted on frozen embeddings.

    * ``"rf"``: ``RandomForestClassifier(n_estimators=200, random_state=seed)`` (Mantis, MantisV2,
      UniShape and NuTime protocols; 200 trees as in the authors' zero-shot scripts);
    * ``"lr"``: ``StandardScaler`` + ``LogisticRegression`` (MantisV2+LR);
    * ``"svm"``: :class:`MomentSVMHead` (MOMENT+SVM).
    """
    if kind == "rf":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=n_jobs)
    if kind == "lr":
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=lr_max_iter, random_state=seed))
    if kind == "svm":
        return MomentSVMHead()
    raise ValueError(f"unknown classifier head {kind!r}; expected 'rf', 'lr' or 'svm'")
