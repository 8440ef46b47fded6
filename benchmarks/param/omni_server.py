"""omniORBpy's Param_Test server (param.idl): every operation answers (s1, s1, s1).

    python omni_server.py --port P [--cpu N]
"""

import argparse

import param_common as common
from benchprocs import pin_to_cpu, serve_omni


def servant_class(skeleton_class):
    def operation(self, s1, s2):
        return common.answer(s1, s2)
    return type("Param_Test_i", (skeleton_class,),
                {name: operation for name in common.OPERATIONS})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cpu", type=int, default=None)
    args = parser.parse_args()
    pin_to_cpu(args.cpu)          # before ORB_init: omniORB's threads inherit it
    serve_omni(common.IDL_PATH, common.INTERFACE, lambda skeleton: servant_class(skeleton)(),
               b"Param_Test", args.port)


if __name__ == "__main__":
    main()
