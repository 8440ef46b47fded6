"""Modules that moved keep their old import names, with a DeprecationWarning."""

import json
import subprocess
import sys

from pycdr._moved import MOVED


def test_every_old_name_is_the_new_module_and_warns_once():
    program = r"""
import importlib, json, sys, warnings
from pycdr._moved import MOVED
out = {}
for old, new in MOVED.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
        again = importlib.import_module(old)
    out[old] = {
        "same": module is sys.modules[new] and again is module,
        "spec": module.__spec__.name,
        "warnings": [str(w.message) for w in caught if w.category is DeprecationWarning],
    }
print(json.dumps(out))
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            check=True)
    seen = json.loads(result.stdout)
    assert set(seen) == set(MOVED)
    for old, new in MOVED.items():
        assert seen[old]["same"], old
        assert seen[old]["spec"] == new, old
        assert seen[old]["warnings"] == [f"{old} has moved to {new}: import it from there"], old


def test_from_import_of_an_old_name_points_the_warning_at_the_caller(tmp_path):
    script = tmp_path / "user_code.py"
    script.write_text("from pycdr.pcap import decode_capture\n")
    result = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", str(script)],
                            capture_output=True, text=True, check=True)
    assert "user_code.py:1: DeprecationWarning: pycdr.pcap has moved to pycdr.capture.giop" \
        in result.stderr
