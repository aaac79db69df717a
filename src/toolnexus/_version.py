"""The package's version: the one place it is written (``pyproject.toml`` reads it, and
``toolnexus.__version__`` re-exports it), in a module of its own so that what needs it
(tracing's instrumentation scope, the CLI's ``--version``) imports no package facade."""

__version__ = "0.1.0"
