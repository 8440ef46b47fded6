"""`pycdr names` and corbaname: targets against real naming services: omniNames (the venv's
salome-omniorb), JacORB 3.9's NameServer and the OpenJDK ORB's TransientNameServer, each
started on 127.0.0.1 at a free port by this module and stopped by it.  The objects bound are
served by the reference ORB in this process (EchoAll::Echo)."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from peers.fixtures import omni_names  # noqa: F401 (pytest fixture)
from peers.naming import start_jacorb_names, start_openjdk_names
from peers.omni import start_omni_names
from peers.process import PeerNotInstalled
from pycdr.cli.main import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNREACHABLE, main
from pycdr.codec.ior import ior_from_string, ior_to_string
from pycdr.conformance.echo import ECHO_IDL, ECHO_INTERFACE, ECHO_REPO_ID, load_echo_module
from pycdr.conformance.target import resolve_target
from pycdr.orb import DynamicServant
from pycdr.orb.servant import echo_handler
from pycdr.orb.sync import SyncORB
from pycdr.replay.targets import parse_target

ECHO = load_echo_module().interfaces[ECHO_INTERFACE]
CONTEXT_ID = "IDL:omg.org/CosNaming/NamingContextExt:1.0"
NAMING_SERVICES = {"omniNames": start_omni_names, "JacORB": start_jacorb_names,
                   "OpenJDK": start_openjdk_names}


@pytest.fixture(scope="module", params=list(NAMING_SERVICES))
def ns(request):
    try:
        peer = NAMING_SERVICES[request.param]()
    except PeerNotInstalled as e:
        pytest.skip(f"{request.param} naming service not installed: {e}")
    peer.vendor = request.param
    yield peer
    peer.stop()


@pytest.fixture(scope="module")
def echo():
    """An EchoAll::Echo object of the reference ORB: (its IOR text, its port)."""
    with SyncORB() as orb:
        served = orb.serve(DynamicServant(ECHO, echo_handler(ECHO)), "Echo")
        yield ior_to_string(served.server.ior(served.key)), served.port


def run(*args, stdin=None):
    result = CliRunner().invoke(main, [str(a) for a in args], input=stdin)
    # Every outcome is an exit status, never an exception escaping the command.
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    return result


def names(ns, *args, stdin=None):
    return run("names", *args, "--ns", ns.corbaloc, stdin=stdin)


def one_line(result) -> str:
    """The command's only stderr line (naming errors are one line)."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output and "{'" not in result.output
    return lines[0]


def fresh(ns, prefix) -> str:
    """A context made for one test: tests share a naming service but not names."""
    r = names(ns, "mkctx", prefix)
    assert r.exit_code == EXIT_OK, r.output
    return prefix


def test_mkctx_bind_ls_resolve(ns, echo):
    top = fresh(ns, "browse")
    assert names(ns, "mkctx", f"{top}/sub.dir").stdout.strip() == f"created context {top}/sub.dir"
    r = names(ns, "bind", f"{top}/echo.obj", echo[0])
    assert r.exit_code == EXIT_OK and r.stdout.strip() == f"bound {top}/echo.obj ({ECHO_REPO_ID})"
    r = names(ns, "ls", top)
    assert r.exit_code == EXIT_OK, r.output
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["sub.dir/", "context"]
    assert lines[1].split() == ["echo.obj", "object", ECHO_REPO_ID]
    r = names(ns, "ls", "--json", top)
    listing = json.loads(r.stdout)
    assert listing["context"] == top
    by_name = {b["name"]: b for b in listing["bindings"]}
    assert set(by_name) == {f"{top}/sub.dir", f"{top}/echo.obj"}
    assert by_name[f"{top}/echo.obj"]["type"] == "object"
    assert (by_name[f"{top}/echo.obj"]["id"], by_name[f"{top}/echo.obj"]["kind"]) == ("echo", "obj")
    assert by_name[f"{top}/echo.obj"]["type_id"] == ECHO_REPO_ID
    assert ior_from_string(by_name[f"{top}/echo.obj"]["ior"]) == ior_from_string(echo[0])
    assert by_name[f"{top}/sub.dir"]["type"] == "context"
    assert by_name[f"{top}/sub.dir"]["type_id"] == CONTEXT_ID
    # The root lists the new context.
    assert f"{top}/" in names(ns, "ls").stdout.split()
    r = names(ns, "resolve", f"{top}/echo.obj")
    assert r.exit_code == EXIT_OK and ior_from_string(r.stdout.strip()) == ior_from_string(echo[0])
    j = json.loads(names(ns, "resolve", "--json", f"{top}/echo.obj").stdout)
    assert j["name"] == f"{top}/echo.obj" and j["type_id"] == ECHO_REPO_ID


def test_escaped_names(ns, echo):
    top = fresh(ns, "escapes")
    name = top + "/a\\/b.c\\.d"         # id "a/b", kind "c.d"
    assert names(ns, "bind", name, echo[0]).exit_code == EXIT_OK
    entry, = json.loads(names(ns, "ls", "--json", top).stdout)["bindings"]
    assert (entry["id"], entry["kind"], entry["name"]) == ("a/b", "c.d", name)
    assert names(ns, "ls", top).stdout.split()[0] == "a\\/b.c\\.d"
    assert names(ns, "resolve", name).exit_code == EXIT_OK


def test_bind_sources_rebind_unbind(ns, echo, tmp_path):
    top = fresh(ns, "edit")
    ior_file = tmp_path / "echo.ior"
    ior_file.write_text(echo[0] + "\n")
    assert names(ns, "bind", f"{top}/from-file", str(ior_file)).exit_code == EXIT_OK
    assert names(ns, "bind", f"{top}/from-stdin", "-", stdin=echo[0]).exit_code == EXIT_OK
    for name in ("from-file", "from-stdin"):
        r = names(ns, "resolve", f"{top}/{name}")
        assert ior_from_string(r.stdout.strip()) == ior_from_string(echo[0])
    # bind refuses a bound name; rebind replaces it
    r = names(ns, "bind", f"{top}/from-file", ns.ior)
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r).startswith(f'already bound: "{top}/from-file"')
    assert names(ns, "rebind", f"{top}/from-file", ns.ior).exit_code == EXIT_OK
    r = names(ns, "resolve", "--json", f"{top}/from-file")
    assert json.loads(r.stdout)["type_id"] == CONTEXT_ID
    r = names(ns, "unbind", f"{top}/from-file")
    assert r.exit_code == EXIT_OK and r.stdout.strip() == f"unbound {top}/from-file"
    r = names(ns, "resolve", f"{top}/from-file")
    assert r.exit_code == EXIT_BAD_INPUT and "from-file" in one_line(r)
    assert [b["name"] for b in json.loads(names(ns, "ls", "--json", top).stdout)["bindings"]] \
        == [f"{top}/from-stdin"]
    # A reference that is none, and a file that does not exist: usage errors.
    r = names(ns, "bind", f"{top}/x", str(tmp_path / "missing.ior"))
    assert r.exit_code == 2 and "missing.ior" in r.stderr


def test_unbind_destroy_and_not_empty(ns, echo):
    top = fresh(ns, "gone")
    names(ns, "mkctx", f"{top}/full")
    names(ns, "bind", f"{top}/full/x", echo[0])
    r = names(ns, "unbind", "--destroy", f"{top}/full")
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r).startswith(f'not empty: the context "{top}/full" still has bindings')
    names(ns, "unbind", f"{top}/full/x")
    r = names(ns, "unbind", "--destroy", f"{top}/full")
    assert r.exit_code == EXIT_OK and "destroyed" in r.stdout
    assert names(ns, "resolve", f"{top}/full").exit_code == EXIT_BAD_INPUT


def test_tree_cycle_and_depth(ns, echo):
    top = fresh(ns, "tree")
    names(ns, "mkctx", f"{top}/a")
    names(ns, "mkctx", f"{top}/a/b.k")
    names(ns, "bind", f"{top}/a/b.k/leaf.obj", echo[0])
    top_ior = names(ns, "resolve", top).stdout.strip()
    # a cycle: tree/a/b.k/up is tree itself
    assert names(ns, "bind", "--context", f"{top}/a/b.k/up", top_ior).exit_code == EXIT_OK
    r = names(ns, "tree", top)
    assert r.exit_code == EXIT_OK, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == f"{top}/"
    assert lines[1].split() == ["a/", "context"]
    assert lines[2].split() == ["b.k/", "context"]
    # (contexts first)
    assert lines[3].split()[:2] == ["up/", "context"] and f"(listed at {top})" in lines[3]
    assert lines[4].split() == ["leaf.obj", "object", ECHO_REPO_ID]
    assert len(lines) == 5
    tree = json.loads(names(ns, "tree", "--json", top).stdout)
    a, = tree["bindings"]
    bk, = a["bindings"]
    assert {b["name"] for b in bk["bindings"]} == {f"{top}/a/b.k/leaf.obj", f"{top}/a/b.k/up"}
    up = next(b for b in bk["bindings"] if b["id"] == "up")
    assert up["seen_at"] == top and "bindings" not in up
    # --depth 0: the first level only, deeper contexts marked
    r = names(ns, "tree", "--depth", "0", top)
    assert r.stdout.splitlines()[1:] == [r.stdout.splitlines()[1]]
    assert r.stdout.splitlines()[1].rstrip().endswith("...")


def test_long_list_through_the_binding_iterator(ns, echo):
    top = fresh(ns, "many")
    for i in range(12):
        assert names(ns, "bind", f"{top}/n{i:02d}.obj", echo[0]).exit_code == EXIT_OK
    for batch in (1, 5, 12, 100):
        r = names(ns, "ls", "--batch", batch, "--no-type-ids", top)
        assert r.exit_code == EXIT_OK, r.output
        assert [line.split()[0] for line in r.stdout.splitlines()] == \
            [f"n{i:02d}.obj" for i in range(12)]


def test_naming_errors_one_line(ns, echo):
    top = fresh(ns, "errors")
    names(ns, "bind", f"{top}/obj", echo[0])
    # missing_node: the failing component and the context it is missing from
    r = names(ns, "resolve", f"{top}/nope")
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r).startswith(f'not found: "{top}/nope": nothing is bound to "nope" in '
                                  f'context "{top}"')
    r = names(ns, "resolve", f"{top}/nope/deeper")
    assert r.exit_code == EXIT_BAD_INPUT and '"nope"' in one_line(r)
    # through an object: not_context (JacORB says missing_node for it)
    r = names(ns, "resolve", f"{top}/obj/z")
    assert r.exit_code == EXIT_BAD_INPUT
    line = one_line(r)
    if ns.vendor == "JacORB":
        assert line.startswith(f'not found: "{top}/obj/z": nothing is bound to "obj"')
    else:
        assert line.startswith(f'not found: "{top}/obj/z": "{top}/obj" is bound to an object, '
                               'not a naming context')
    # listing an object
    for command in ("ls", "tree"):
        r = names(ns, command, f"{top}/obj")
        assert r.exit_code == EXIT_BAD_INPUT
        assert one_line(r) == f'"{top}/obj" is bound to an object ({ECHO_REPO_ID}), not a ' \
            'naming context'
    # a malformed name never reaches the naming service
    r = names(ns, "resolve", "a//b")
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r) == "bad name 'a//b': empty name component (at character 2)"


def test_not_object_and_invalid_name(ns, echo):
    top = fresh(ns, "kinds")
    names(ns, "mkctx", f"{top}/ctx")
    r = names(ns, "rebind", f"{top}/ctx", echo[0])
    if ns.vendor == "omniNames":       # omniNames replaces a context binding by an object one
        assert r.exit_code == EXIT_OK
    else:
        assert r.exit_code == EXIT_BAD_INPUT
        assert one_line(r).startswith(f'not found: "{top}/ctx": "{top}/ctx" is bound to a '
                                      'naming context, not an object')
    r = names(ns, "bind", f"{top}/.", echo[0])      # the component with empty id and kind
    if ns.vendor == "OpenJDK":
        assert r.exit_code == EXIT_BAD_INPUT
        assert one_line(r).startswith(f'invalid name: "{top}/."')
    else:
        assert r.exit_code == EXIT_OK


def test_unreachable_naming_service():
    r = run("names", "ls", "--ns", "corbaloc::127.0.0.1:1/NameService", "--timeout", "3")
    assert r.exit_code == EXIT_UNREACHABLE
    assert one_line(r).startswith("naming service 127.0.0.1:1 (NameService) unreachable: ")
    for command in (["call", "corbaname::127.0.0.1:1#a/b", "echo_long", "1", "--idl", ECHO_IDL],
                    ["probe", "corbaname::127.0.0.1:1#a/b"],
                    ["ior", "--resolve", "corbaname::127.0.0.1:1#a/b"]):
        r = run(*command)
        assert r.exit_code == EXIT_UNREACHABLE, (command, r.output)
        assert "unreachable" in one_line(r)


def test_corbaname_in_call(ns, echo):
    top = fresh(ns, "call")
    names(ns, "bind", f"{top}/echo.obj", echo[0])
    r = run("call", ns.corbaname(f"{top}/echo.obj"), "echo_long", "7", "--idl", ECHO_IDL)
    assert r.exit_code == EXIT_OK, r.output
    assert r.stdout.strip() == "7"
    r = run("call", ns.corbaname(f"{top}/nope"), "echo_long", "7", "--idl", ECHO_IDL)
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r).startswith(f'not found: "{top}/nope": nothing is bound to "nope"')


def test_corbaname_in_probe_and_ior(ns, echo):
    top = fresh(ns, "probe")
    names(ns, "bind", f"{top}/echo.obj", echo[0])
    url = ns.corbaname(f"{top}/echo.obj")
    r = run("probe", url)
    assert r.exit_code == EXIT_OK, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{top}/echo.obj: resolved through the naming service at "
                               f"corbaloc:iiop:1.0@127.0.0.1:{ns.port}/NameService")
    # the named object is probed, not the naming service
    assert lines[1].startswith(f"127.0.0.1:{echo[1]} ")
    report = json.loads(run("probe", "--json", url).stdout)
    assert report["port"] == echo[1]
    assert report["resolved_through"]["name"] == f"{top}/echo.obj"
    assert report["object"]["object_key_text"] == "Echo"
    r = run("probe", ns.corbaname(f"{top}/nope"))
    assert r.exit_code == EXIT_BAD_INPUT and "nothing is bound to" in one_line(r)
    # ior: the naming service's address, and with --resolve the object too
    r = run("ior", url)
    assert r.exit_code == EXIT_OK and "Resolves to" not in r.stdout
    assert f"Name: {top}/echo.obj" in r.stdout
    r = run("ior", "--resolve", url)
    assert r.exit_code == EXIT_OK, r.output
    after = r.stdout.split("Resolves to:\n", 1)[1]
    assert f'Type ID: "{ECHO_REPO_ID}"' in after.splitlines()[0] or ECHO_REPO_ID in after
    j = json.loads(run("ior", "--json", "--resolve", url).stdout)
    assert j["kind"] == "corbaname" and j["resolved"]["type_id"] == ECHO_REPO_ID
    r = run("ior", "--resolve", ns.corbaname(f"{top}/nope"))
    assert r.exit_code == EXIT_BAD_INPUT and "nothing is bound to" in one_line(r)


def test_corbaname_names_context(ns, echo):
    """--ns may be a corbaname: names then start at the context it names."""
    top = fresh(ns, "start")
    names(ns, "bind", f"{top}/inner", echo[0])
    r = run("names", "ls", "--ns", ns.corbaname(top))
    assert r.exit_code == EXIT_OK and r.stdout.split()[0] == "inner"
    r = run("names", "resolve", "nope", "--ns", ns.corbaname(top))
    assert r.exit_code == EXIT_BAD_INPUT
    assert one_line(r).startswith('not found: "nope": nothing is bound to "nope"')


def test_call_traceback_free_in_a_real_process(ns):
    """The reported case, as a user runs it: one line on stderr, exit status 1."""
    completed = subprocess.run(
        [sys.executable, "-m", "pycdr.cli.main", "call", ns.corbaname("nope"), "echo_long", "7",
         "--idl", ECHO_IDL], capture_output=True, text=True, timeout=60)
    assert completed.returncode == EXIT_BAD_INPUT
    assert completed.stderr.splitlines() == [
        f'not found: "nope": nothing is bound to "nope" (naming service '
        f'127.0.0.1:{ns.port} (NameService))']


def test_corbaname_targets_of_conformance_fuzz_replay(omni_names, echo, tmp_path):
    """conformance, fuzz and replay test the object a corbaname names, not the naming
    service; a name it does not have is the one-line error, exit status 1."""
    fresh(omni_names, "targets")
    names(omni_names, "bind", "targets/echo.obj", echo[0])
    url = omni_names.corbaname("targets/echo.obj")
    target = resolve_target(url)
    assert (target.port, target.object_key, target.type_id) == (echo[1], b"Echo", ECHO_REPO_ID)
    assert parse_target(url).endpoint.port == echo[1]
    capture = tmp_path / "empty.pcap"
    capture.write_bytes(b"")
    missing = omni_names.corbaname("targets/nope")
    for command in (["conformance", missing], ["fuzz", missing, "--max-cases", "1"],
                    ["replay", str(capture), "--target", missing]):
        r = run(*command)
        assert r.exit_code == EXIT_BAD_INPUT, (command, r.output)
        assert one_line(r).startswith('not found: "targets/nope": nothing is bound to "nope" '
                                      'in context "targets"'), command
