"""Test scaffolding shared by the test suite, benchmarks and report previews (never used by a run).

* :mod:`~chorustic.testing.accuracies`   synthetic ``results/accuracies.csv`` (every report path)
* :mod:`~chorustic.testing.checkpoints`  tiny random-weight checkpoints in the real formats of the
  pretrained baselines, and stand-in checkouts with the authors' layout
* :mod:`~chorustic.testing.hub`          a local Hugging Face endpoint (downloads without the network)
* :mod:`~chorustic.testing.training`     a micro ChorusTIC and its training configuration
"""
