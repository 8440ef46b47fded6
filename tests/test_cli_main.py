"""The command group: every subcommand found by its name, modules imported lazily."""

import subprocess
import sys

from pycdr.cli.main import HIDDEN, SUBCOMMANDS, main


def test_every_subcommand_resolves_to_the_command_of_its_name():
    names = main.list_commands(None)
    assert len(names) == len(SUBCOMMANDS) - len(HIDDEN)     # (old names: not in --help)
    for name in [*names, *HIDDEN]:
        assert main.get_command(None, name).name == name
    assert main.get_command(None, "no-such-command") is None


def test_a_command_imports_only_what_it_needs():
    code = ("import sys; from pycdr.cli.main import main; main.get_command(None, 'pcap'); "
            "print('pycdr.orb' in sys.modules, 'pycdr.cli.serve' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr
