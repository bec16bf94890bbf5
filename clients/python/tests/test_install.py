"""`pip install clients/python` gives an importable gpulens_client with its
runner (built from a copy, so the source folder stays clean). Exits 77
(skipped) when pip or setuptools is missing."""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main():
    import importlib.util

    if importlib.util.find_spec("pip") is None or importlib.util.find_spec("setuptools") is None:
        print("SKIP: pip or setuptools not installed")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
        site = os.path.join(tmp, "site")
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
                            "--no-index", "--target", site, src], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print("FAIL: pip install:", r.stdout, r.stderr)
            return 1
        r = subprocess.run([sys.executable, "-c", "import gpulens_client, gpulens_client.__main__, "
                            "gpulens_client._boot; print(gpulens_client.__file__)"],
                           env=dict(os.environ, PYTHONPATH=site), capture_output=True, text=True, cwd=tmp, timeout=60)
        if r.returncode != 0 or not r.stdout.startswith(site):
            print("FAIL: import after install:", r.stdout, r.stderr)
            return 1
        r = subprocess.run([sys.executable, "-m", "gpulens_client", "--url", "http://127.0.0.1:1", "--",
                            sys.executable, "-c", "import gpulens_client; assert gpulens_client._client"],
                           env=dict(os.environ, PYTHONPATH=site), capture_output=True, text=True, cwd=tmp, timeout=60)
        if r.returncode != 0:
            print("FAIL: the installed runner:", r.stdout, r.stderr)
            return 1
    print("pip install: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
