"""A stand-in for PyTorch's CUDA memory API, for tests without a GPU.

Only what gpulens_client calls, returning values of exactly the shapes
PyTorch returns (see torch/cuda/__init__.py here for where each comes from).
The state is set from a JSON file named by GPULENS_FAKE_TORCH (so a child
process can be configured) or from Python with torch.cuda._set(...).
"""

import os
import time

# A slow import, as PyTorch's own (seconds): the module sits in sys.modules,
# initialising, without `cuda`, for GPULENS_FAKE_TORCH_IMPORT_SECONDS.
time.sleep(float(os.environ.get("GPULENS_FAKE_TORCH_IMPORT_SECONDS", "0")))

from . import cuda  # noqa: E402,F401

__version__ = "0.0.0+gpulens-fake"
