"""Servants: what the object adapter hands a request to.

* :class:`DynamicServant` (DSI style): one callable ``handler(operation_name,
  args)`` receives every operation with its decoded in/inout values and
  returns per the convention of :mod:`pycdr.orb.invocation` (or raises a
  user exception or a system exception).  It may be a coroutine function.
* :class:`ClassServant`: a Python object implementing the interface by method
  name (plain or ``async def``); attributes map to ``_get_x``/``_set_x``
  methods if defined, else to the object's attribute ``x``.
* :class:`EchoServant`: a DynamicServant answering in/inout values as the out
  values and result where the types allow (``pycdr serve``, the tests).

``_is_a``, ``_non_existent``, ``_repository_id`` and ``_interface`` (an
InterfaceDef, :mod:`.interface_def`) are answered by the server from the
servant's interface, not by the servant.
"""

from __future__ import annotations

import abc
import inspect

from ..giop.sysexc import NO_IMPLEMENT, OMG_VMCID, CompletionStatus
from ..idl.model import Interface, Operation
from .invocation import result_types, values_to_results


class Servant(abc.ABC):
    """Base: a servant implements one IDL interface."""

    # True: in/inout sequences of short..double arrive as array.array, not lists
    # (pycdr.codec.marshal.decode's numeric_arrays mapping, for servants moving bulk data).
    numeric_arrays = False
    # True: an in/inout sequence<octet> arrives as a memoryview of the request message
    # (read_arguments' octet_views), not a bytes copy: for servants of bulk octets.
    octet_views = False

    def __init__(self, interface: Interface):
        self.interface = interface
        # Built once: dispatch looks operations up by name in O(1).
        self.operations: dict[str, Operation] = interface.all_operations()

    @property
    def repo_id(self) -> str:
        return self.interface.repo_id

    def is_a(self, repo_id: str) -> bool:
        return self.interface.is_a(repo_id)

    def non_existent(self) -> bool:
        return False

    @property
    def concurrent(self) -> bool:
        """Whether requests may overlap (its code awaits): the server gives
        each request a task then; else it serves requests one by one, inline."""
        return True

    def concurrent_operation(self, name: str) -> bool:
        """``concurrent`` for a request of operation ``name`` (asked per request,
        so it must be cheap)."""
        return self.concurrent

    @abc.abstractmethod
    async def invoke(self, op: Operation, args: list):
        """Run ``op``; returns what the operation returns (see invocation)."""

    def call(self, op: Operation, args: list):
        """Start ``op`` without a coroutine: what it returns, or an awaitable of
        that.  The server calls it for operations that are not concurrent (their
        code does not await), saving the coroutines of invoke per request."""
        return self.invoke(op, args)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "invoke" in cls.__dict__ and "call" not in cls.__dict__:
            # A subclass that redefines invoke is served through it.
            cls.call = Servant.call


async def _awaited(value):
    """``value``, or what it gives when it is awaitable."""
    if inspect.isawaitable(value):
        value = await value
    return value


class DynamicServant(Servant):
    def __init__(self, interface: Interface, handler):
        super().__init__(interface)
        self.handler = handler
        self._concurrent_of = (None, False)     # (handler, its answer): asked per request

    @property
    def concurrent(self) -> bool:
        handler, answer = self._concurrent_of
        if handler is not self.handler:
            handler = self.handler
            answer = inspect.iscoroutinefunction(handler) or \
                inspect.iscoroutinefunction(getattr(handler, "__call__", None))
            self._concurrent_of = (handler, answer)
        return answer

    async def invoke(self, op: Operation, args: list):
        # (this class's call: a subclass's call may be Servant's, which awaits invoke)
        return await _awaited(DynamicServant.call(self, op, args))

    def call(self, op: Operation, args: list):
        return self.handler(op.name, args)


class ClassServant(Servant):
    def __init__(self, interface: Interface, implementation):
        super().__init__(interface)
        self.implementation = implementation
        # iscoroutinefunction per method function (asked per request; a method
        # replaced on the implementation is a new function, looked at anew).
        self._is_coroutine: dict = {}

    @property
    def concurrent(self) -> bool:
        impl = self.implementation
        return any(inspect.iscoroutinefunction(getattr(impl, name, None))
                   for name in self.operations)

    def concurrent_operation(self, name: str) -> bool:
        # Only this operation's method matters: a plain method never awaits, so
        # running it inline cannot hold up the servant's async methods.
        method = getattr(self.implementation, name, None)
        function = getattr(method, "__func__", method)
        try:
            return self._is_coroutine[function]
        except KeyError:
            answer = self._is_coroutine[function] = inspect.iscoroutinefunction(method)
            return answer
        except TypeError:               # an unhashable callable: not cached
            return inspect.iscoroutinefunction(method)

    async def invoke(self, op: Operation, args: list):
        return await _awaited(ClassServant.call(self, op, args))    # (as DynamicServant's)

    def call(self, op: Operation, args: list):
        impl = self.implementation
        method = getattr(impl, op.name, None)
        if method is not None:
            return method(*args)
        if op.attribute is not None:
            if op.name.startswith("_set_"):
                setattr(impl, op.attribute, args[0])
                return None
            if hasattr(impl, op.attribute):
                return getattr(impl, op.attribute)
        # The interface has the operation but the implementation lacks it.
        raise NO_IMPLEMENT(OMG_VMCID | 1, CompletionStatus.COMPLETED_NO)


def echo_handler(interface: Interface):
    """A DSI handler that returns the in/inout values as result and out values,
    matched by position (oneway and void-without-outs operations return
    nothing); an operation whose shape does not allow it raises NO_IMPLEMENT."""
    operations = interface.all_operations()
    attributes: dict = {}

    def handle(name: str, args: list):
        op = operations[name]
        if op.attribute is not None:
            if name.startswith("_set_"):
                attributes[op.attribute] = args[0]
                return None
            if op.attribute in attributes:
                return attributes[op.attribute]
            raise NO_IMPLEMENT(OMG_VMCID | 1, CompletionStatus.COMPLETED_NO)
        wanted = result_types(op)
        if op.oneway or not wanted:
            return None
        if len(wanted) != len(args) or any(not t.equivalent(p.type)
                                           for t, p in zip(wanted, op.in_params)):
            raise NO_IMPLEMENT(OMG_VMCID | 1, CompletionStatus.COMPLETED_NO)
        return values_to_results(op, list(args))

    return handle


class EchoServant(DynamicServant):
    def __init__(self, interface: Interface):
        super().__init__(interface, echo_handler(interface))
