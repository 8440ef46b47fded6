"""Compile IDL to omniORBpy stubs inside a peer process.

The salome-omniorb wheel ships the omniidl front end as a Python package but neither an `omniidl`
command nor its preprocessor `omnicpp`, so omniORB.importIDL() cannot run. This runs the packaged
front end with -N (no preprocessor): IDL given to it must not use #include or #define.
"""

import importlib
import os
import subprocess
import sys
import tempfile


def import_idl(idl_path):
    """Generate Python stubs for `idl_path`, import them (the IDL modules and their __POA
    skeleton packages land in sys.modules), and return the names of the IDL's top-level modules,
    e.g. ("PycdrTest",)."""
    with tempfile.TemporaryDirectory(prefix="pycdr-omni-stubs-") as stub_dir:
        completed = subprocess.run(
            [sys.executable, "-c", "from omniidl import main; main.main()",
             "-bpython", "-N", "-C", stub_dir, idl_path],
            capture_output=True, text=True, timeout=60)
        if completed.returncode != 0:
            raise RuntimeError(f"omniidl failed on {idl_path}:\n{completed.stderr}")
        sys.path.insert(0, stub_dir)
        try:
            stub_module = importlib.import_module(os.path.basename(idl_path).replace(".", "_"))
            module_names = stub_module._exported_modules
            # Import everything now: the directory is deleted when this block ends.
            for name in module_names:
                importlib.import_module(name)
                importlib.import_module(skeleton_module_name(name))
        finally:
            sys.path.remove(stub_dir)
    return module_names


def skeleton_module_name(stub_module_name):
    """omniORBpy puts the skeletons of Python module A.B (IDL module A::B) in A__POA.B."""
    top_module, *inner_modules = stub_module_name.split(".")
    return ".".join([top_module + "__POA", *inner_modules])


def interface_classes(scoped_name):
    """(stub class, skeleton class) of an imported IDL interface named like "PycdrTest::Echo".
    Definitions at global scope live in omniORBpy's module _GlobalIDL."""
    *module_path, interface_name = scoped_name.split("::")
    stub_module_name = ".".join(module_path or ["_GlobalIDL"])
    stub_module = sys.modules[stub_module_name]
    skeleton_module = sys.modules[skeleton_module_name(stub_module_name)]
    return getattr(stub_module, interface_name), getattr(skeleton_module, interface_name)
