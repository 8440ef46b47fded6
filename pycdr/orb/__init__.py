"""The reference ORB: an asyncio IIOP server (:mod:`.server`, its messages answered
by :mod:`.dispatch`, object adapter :mod:`.adapter`, servants :mod:`.servant`) and
one with a thread per connection (:mod:`.threads`), an asyncio client
(:mod:`.client`; raw connections for hand-made messages :mod:`.raw`, CosNaming for
corbaname :mod:`.naming`), a blocking-socket client (:mod:`.blocking`) and a
synchronous facade over both (:mod:`.sync`)."""

from .adapter import ObjectAdapter  # noqa: F401
from .client import ORB, ClientOptions, ObjectRef  # noqa: F401
from .invocation import UnknownUserException, dynamic_operation  # noqa: F401
from .raw import RawConnection, RawRead  # noqa: F401
from .server import Server, ServerLimits  # noqa: F401
from .servant import ClassServant, DynamicServant, EchoServant, Servant  # noqa: F401
from .threads import ThreadedServer  # noqa: F401
