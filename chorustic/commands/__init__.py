"""CLI subcommands: one module per command group, each exposing ``register(subparsers)``."""
