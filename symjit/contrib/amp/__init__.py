"""``mx.contrib.amp``: automatic mixed precision, which symjit does not support (see :mod:`.amp`)."""
from .amp import *  # noqa: F403
from .amp import __all__  # noqa: F401
