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

from .codec import tc  # noqa: F401
from .errors import (CDRError, DecodeError, EncodeError, NotSupportedError,  # noqa: F401
                     PycdrError)
from .codec.typecode import TCKind, TypeCode  # noqa: F401
from .codec.values import Any, LongDouble  # noqa: F401
from .codec.marshal import (decode, decode_encapsulation, encode, encode_encapsulation,
                            read_value, write_value)

__version__ = "0.1.0"
