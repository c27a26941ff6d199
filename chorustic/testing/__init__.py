"""Test scaffolding shared by the test suite, benchmarks and report previews (never used by a run).

* :mod:`~chorustic.testing.accuracies`   synthetic ``results/accuracies.csv`` (every report path)
* :mod:`~chorustic.testing.authors_deps` stand-ins for the names UniShape's and NuTime's code imports from
  ``timm`` and ``fastai``, where those do not import (their real code then still runs in tests)
* :mod:`~chorustic.testing.checkpoints`  tiny random-weight checkpoints in the real formats of the
  pretrained baselines, stand-in checkouts with the authors' layout, and random-weight checkpoints in the
  released layout built by the authors' real UniShape and NuTime classes
* :mod:`~chorustic.testing.hub`          a local Hugging Face endpoint (downloads without the network)
* :mod:`~chorustic.testing.training`     a micro ChorusTIC and its training configuration
"""
