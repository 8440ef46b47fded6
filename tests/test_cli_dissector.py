"""`pycdr dissector install|uninstall`: into the folder tshark reports as its personal Lua
plugin folder, with --dry-run changing nothing, and out again."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from bounded import PYCDR
from pycdr.cli.dissector import PLUGIN_FILES, tshark_lua_folder
from pycdr.cli.main import main


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_install_dry_run_and_uninstall(tmp_path):
    dest = tmp_path / "plugins"
    dry = invoke("dissector", "install", "--dest", dest, "--dry-run")
    assert dry.exit_code == 0 and "would copy" in dry.stdout
    assert not dest.exists()
    done = invoke("dissector", "install", "--dest", dest)
    assert done.exit_code == 0, done.output
    assert all((dest / name).is_file() for name in PLUGIN_FILES)
    assert any((dest / "types").iterdir())
    dry = invoke("dissector", "uninstall", "--dest", dest, "--dry-run")
    assert dry.exit_code == 0 and "would remove" in dry.stdout
    assert all((dest / name).is_file() for name in PLUGIN_FILES)
    gone = invoke("dissector", "uninstall", "--dest", dest)
    assert gone.exit_code == 0 and "removed" in gone.stdout
    assert not any((dest / name).exists() for name in PLUGIN_FILES)
    again = invoke("dissector", "uninstall", "--dest", dest)
    assert again.exit_code == 0 and "nothing of pycdr's dissector" in again.stdout


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_the_default_folder_is_the_one_tshark_reports(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    reported = subprocess.run(["tshark", "-G", "folders"], capture_output=True, text=True,
                              env=env, timeout=60).stdout
    line = next(text for text in reported.splitlines()
                if text.startswith("Personal Lua Plugins:"))
    folder = line.split(":", 1)[1].strip()
    assert folder.startswith(str(tmp_path))
    result = subprocess.run([PYCDR, "dissector", "install"], capture_output=True, text=True,
                            env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert os.path.isfile(os.path.join(folder, PLUGIN_FILES[0]))
    # tshark loads it from there: the protocol is known.
    protocols = subprocess.run(["tshark", "-G", "protocols"], capture_output=True, text=True,
                               env=env, timeout=120).stdout
    assert "\tgiopx\t" in protocols or "giopx" in protocols


def test_tshark_lua_folder_is_none_without_tshark():
    assert tshark_lua_folder("/nonexistent/tshark") is None
