"""csconform: an executable spec, a reference engine and a performance model for wafer-scale training."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("csconform")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
