"""The versions: ``__version__`` is the MXNet API level symjit implements (MXNet code compares
``mx.__version__`` with MXNet's releases), ``__symjit_version__`` symjit's own release (the package's
version, which symjit's tools and caches use). ``symjit --version`` prints both.

>>> __version__, __symjit_version__
('1.9.1', '0.1.0')
"""

__version__ = "1.9.1"
__symjit_version__ = "0.1.0"
