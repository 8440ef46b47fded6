"""What `pycdr names` asks of a naming service, checked on a scripted one (the reference ORB
serving CosNaming::NamingContext from the shipped CosNaming.idl): list(how_many), then the
BindingIterator's next_n(how_many) until it answers false, then its destroy(); and the naming
exceptions the peers of test_names.py do not raise (CannotProceed, InvalidName on resolve,
system exceptions in the reply) as one line."""

import json

import pytest
from click.testing import CliRunner

from pycdr.cli.main import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNREACHABLE, main
from pycdr.giop.sysexc import OBJECT_NOT_EXIST, TRANSIENT, CompletionStatus
from pycdr.orb import DynamicServant
from pycdr.orb import naming
from pycdr.orb.jsonvalues import from_json
from pycdr.orb.sync import SyncORB

COSNAMING = naming.cosnaming()
CONTEXT = naming.interface(naming.NAMING_CONTEXT)
ITERATOR = naming.interface(naming.BINDING_ITERATOR)
BINDING = COSNAMING.types["CosNaming::Binding"]
EXCEPTION = {name: COSNAMING.classes[f"CosNaming::NamingContext::{name}"]
             for name in ("NotFound", "CannotProceed", "InvalidName")}
COUNT = 11


def binding(i):
    return from_json(BINDING, {"binding_name": [{"id": f"b{i:02d}", "kind": "obj"}],
                               "binding_type": "nobject"})


class Scripted:
    """A naming context of COUNT object bindings whose list gives the rest through a
    BindingIterator; resolve fails as the first component says."""

    def __init__(self):
        self.calls = []
        self.remaining = []
        self.iterator_ior = None
        self.own_ior = None
        self.fail_next_n = None     # an exception next_n raises instead of answering

    def context(self, op, args):
        self.calls.append((op, *args[:1]) if op == "list" else (op,))
        if op == "list":
            everything = [binding(i) for i in range(COUNT)]
            how_many = args[0]
            self.remaining = everything[how_many:]
            return everything[:how_many], (self.iterator_ior if self.remaining else None)
        if op == "resolve":
            first = args[0][0].id
            if first == "far":
                raise EXCEPTION["CannotProceed"](cxt=self.own_ior, rest_of_name=args[0][1:])
            if first == "bad":
                raise EXCEPTION["InvalidName"]()
            if first == "down":
                raise TRANSIENT(0, CompletionStatus.COMPLETED_NO)
            if first == "odd":
                raise COSNAMING.classes["CosNaming::NamingContextExt::InvalidAddress"]()
            raise EXCEPTION["NotFound"](why=from_json(
                COSNAMING.types["CosNaming::NamingContext::NotFoundReason"], "missing_node"),
                rest_of_name=args[0])
        raise AssertionError(op)

    def iterator(self, op, args):
        self.calls.append((op, *args))
        if op == "next_n":
            if self.fail_next_n is not None:
                raise self.fail_next_n
            chunk, self.remaining = self.remaining[:args[0]], self.remaining[args[0]:]
            return bool(chunk), chunk
        assert op == "destroy"
        return None


@pytest.fixture
def scripted():
    script = Scripted()
    with SyncORB() as orb:
        served = orb.serve(DynamicServant(CONTEXT, script.context), "NameService")
        key = served.activate(DynamicServant(ITERATOR, script.iterator), "Iterator")
        script.iterator_ior = served.server.ior(key)
        script.own_ior = served.server.ior(served.key)
        yield script, f"corbaloc::127.0.0.1:{served.port}/NameService"


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    return result


@pytest.mark.parametrize("batch", [1, 4, COUNT - 1, COUNT, 1000])
def test_list_then_next_n_until_false_then_destroy(scripted, batch):
    script, ns = scripted
    r = run("names", "ls", "--no-type-ids", "--batch", batch, "--ns", ns)
    assert r.exit_code == EXIT_OK, r.output
    assert [line.split()[0] for line in r.stdout.splitlines()] == \
        [f"b{i:02d}.obj" for i in range(COUNT)]
    if batch >= COUNT:          # all in list's answer: no iterator to go through
        assert script.calls == [("list", batch)]
        return
    chunks = -(-(COUNT - batch) // batch)
    assert script.calls == [("list", batch)] + [("next_n", batch)] * (chunks + 1) + \
        [("destroy",)]


def test_a_failing_iterator_is_destroyed_and_told(scripted):
    script, ns = scripted
    script.fail_next_n = OBJECT_NOT_EXIST(0, CompletionStatus.COMPLETED_NO)
    r = run("names", "ls", "--no-type-ids", "--batch", 4, "--ns", ns)
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r).startswith("the context itself: the naming service raised "
                                  "CORBA::OBJECT_NOT_EXIST")
    assert script.calls == [("list", 4), ("next_n", 4), ("destroy",)]


def one_line(result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_cannot_proceed(scripted):
    _script, ns = scripted
    r = run("names", "resolve", "far/away/there", "--ns", ns)
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r).startswith('cannot proceed: "far/away/there": the naming service could '
                                  'not go on at "away/there"')


def test_invalid_name(scripted):
    _script, ns = scripted
    r = run("names", "resolve", "bad.kind", "--ns", ns)
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r).startswith('invalid name: "bad.kind" (the naming service refuses it')


def test_system_exception_in_the_reply(scripted):
    """A TRANSIENT the naming service answers with: something on the way is down."""
    _script, ns = scripted
    r = run("names", "resolve", "down/x", "--ns", ns)
    assert r.exit_code == EXIT_UNREACHABLE
    assert one_line(r).startswith('"down/x": CORBA::TRANSIENT')
    assert "a context the name goes through, could not be reached" in one_line(r)


def test_system_exception_other_than_unreachable(scripted):
    """resolve answered with an exception it does not declare: the reference ORB's server
    sends UNKNOWN for it (CORBA 3.x Part 2, 8.3.1), told in one line, exit status 1."""
    _script, ns = scripted
    r = run("names", "resolve", "odd", "--ns", ns)
    assert r.exit_code == EXIT_BAD_INPUT
    line = one_line(r)
    assert line.startswith('"odd": the naming service raised CORBA::UNKNOWN minor OMG:1')
    assert "{'" not in line and "b'" not in line


def test_missing_node_of_a_one_component_name(scripted):
    _script, ns = scripted
    r = run("names", "resolve", "nothing", "--ns", ns)
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r) == 'not found: "nothing": nothing is bound to "nothing" (naming ' \
        f'service 127.0.0.1:{ns.rsplit(":", 1)[1].split("/")[0]} (NameService))'


def test_a_binding_gone_while_listed(scripted):
    """ls resolves every object binding for its type id; one that resolve no longer finds
    (unbound meanwhile: this script's resolve finds none) is shown with why, the rest
    of the listing goes on."""
    _script, ns = scripted
    r = run("names", "ls", "--type-ids", "--json", "--ns", ns)
    assert r.exit_code == EXIT_OK, r.output
    bindings = json.loads(r.stdout)["bindings"]
    assert len(bindings) == COUNT
    assert all(b["error"].startswith(f'not found: "{b["name"]}"') and "ior" not in b
               for b in bindings)


def test_the_idl_ships_in_the_wheel():
    """pyproject's package data for pycdr.idl takes every shipped IDL file (a wheel without
    CosNaming.idl would leave corbaname: and `pycdr names` without their types)."""
    import fnmatch
    import os
    tomllib = pytest.importorskip("tomllib", reason="tomllib (Python 3.11+) reads pyproject.toml")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        globs = tomllib.load(f)["tool"]["setuptools"]["package-data"]["pycdr.idl"]
    shipped = os.listdir(os.path.join(root, "pycdr", "idl", "standard"))
    assert "CosNaming.idl" in shipped
    assert naming.COSNAMING_IDL == os.path.join(root, "pycdr", "idl", "standard", "CosNaming.idl")
    for name in shipped:
        assert any(fnmatch.fnmatch(f"standard/{name}", g) for g in globs), name
