"""A stand-in for PyTorch's CUDA memory API, for tests without a GPU.

Only what gpulens_client calls, returning values of exactly the shapes
PyTorch returns (see torch/cuda/__init__.py here for where each comes from).
The state is set from a JSON file named by GPULENS_FAKE_TORCH (so a child
process can be configured) or from Python with torch.cuda._set(...).
"""

from . import cuda  # noqa: F401

__version__ = "0.0.0+gpulens-fake"
