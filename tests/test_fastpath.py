"""PYCDR_PURE=1 switches every C fast path off at once (pycdr.fastpath), and without it each
module with a built extension takes its C path."""

import json
import os
import subprocess
import sys

WHICH = """
import json
import pycdr.capture.read as read, pycdr.codec.marshal as marshal
import pycdr.fuzz.feedback as feedback, pycdr.replay.lanes as lanes
print(json.dumps({"marshal": marshal.IMPLEMENTATION, "capture": read.IMPLEMENTATION,
                  "feedback": feedback.IMPLEMENTATION,
                  "lanes": "python" if lanes._Lane is None else "c"}))
"""


def paths(pure: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYCDR_PURE"}
    if pure is not None:
        env["PYCDR_PURE"] = pure
    done = subprocess.run([sys.executable, "-c", WHICH], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_pure_switches_every_c_path_off():
    assert set(paths("1").values()) == {"python"}


def test_without_pure_each_built_extension_is_used():
    from importlib.util import find_spec
    built = {"marshal": "pycdr.codec._speedups", "capture": "pycdr.capture._pcapwalk",
             "feedback": "pycdr.fuzz._edgemap", "lanes": "pycdr._replaylane"}
    expected = {name: "c" if find_spec(module) else "python" for name, module in built.items()}
    assert paths(None) == expected
    assert paths("0") == expected        # only "1" asks for the pure path
