"""python3 -m gpulens_client --url URL -- COMMAND ARGS...

Runs an unchanged program with the client started in it: the command runs
with this package and a sitecustomize module on PYTHONPATH, and every Python
process it starts (workers included) pushes its own allocator with its own
pid. Exits with the program's status (it replaces this process).
"""

import argparse
import os
import shutil
import sys


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        at = argv.index("--")
        own, command = argv[:at], argv[at + 1:]
    else:
        own, command = argv, []
    parser = argparse.ArgumentParser(prog="python3 -m gpulens_client",
                                     description="Run a program with gpulens_client pushing its allocator "
                                                 "statistics to a gpulens agent.")
    parser.add_argument("--url", default=os.environ.get("GPULENS_URL", "http://127.0.0.1:9400"),
                        help="the agent (serve --push), default http://127.0.0.1:9400")
    parser.add_argument("--interval", type=float, default=None, help="seconds between pushes (default 5)")
    parser.add_argument("--snapshot-every", type=int, default=None,
                        help="take the allocator snapshot every Nth push (default 12; 0: never)")
    parser.add_argument("--token-file", default=None, help="bearer token for push.token_file")
    args = parser.parse_args(own)
    if not command:
        parser.error("give the program after --, e.g. -- python serve.py")
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    env["GPULENS_URL"] = args.url
    if args.interval is not None:
        env["GPULENS_INTERVAL"] = str(args.interval)
    if args.snapshot_every is not None:
        env["GPULENS_SNAPSHOT_EVERY"] = str(args.snapshot_every)
    if args.token_file:
        env["GPULENS_TOKEN_FILE"] = os.path.abspath(args.token_file)
    path = [os.path.join(here, "_boot"), os.path.dirname(here)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    exe = shutil.which(command[0])
    if exe is None:
        print("python3 -m gpulens_client: %s: command not found" % command[0], file=sys.stderr)
        return 127
    os.execve(exe, command, env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
