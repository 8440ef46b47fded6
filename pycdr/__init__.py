"""pycdr: CORBA CDR, GIOP and IIOP in Python.

    >>> import pycdr
    >>> from pycdr import tc
    >>> pycdr.encode(tc.long, 5).hex()
    '00000005'
    >>> pycdr.decode(tc.long, bytes.fromhex('00000005'))
    5
"""

from . import _moved
_moved.install()

from . import tc  # noqa: F401
from .errors import (CDRError, DecodeError, EncodeError, NotSupportedError,  # noqa: F401
                     PycdrError)
from .typecode import TCKind, TypeCode  # noqa: F401
from .values import Any, LongDouble  # noqa: F401
from .marshal import (decode, decode_encapsulation, encode,  # noqa: F401
                      encode_encapsulation, read_value, write_value)

__version__ = "0.1.0"
