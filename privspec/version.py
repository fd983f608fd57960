"""privspec's version: in its own module, so that modules reading it (a report's
provenance, ``privspec --version``) do not import the package that imports them."""

__version__ = "0.1.0"
