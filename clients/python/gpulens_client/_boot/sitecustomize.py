"""Started by `python3 -m gpulens_client`: starts the client in every Python
process of the program (when GPULENS_URL is set), then runs the
sitecustomize module this one hides, if there is one."""

import importlib.machinery
import importlib.util
import os
import sys

if os.environ.get("GPULENS_URL"):
    try:
        import gpulens_client

        gpulens_client.start()
    except Exception as e:  # never break the program
        print("gpulens_client: not started: %s" % e, file=sys.stderr)

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here])
if _spec is not None and _spec.loader is not None:
    _next = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_next)
