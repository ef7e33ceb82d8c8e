"""Where searches rank: the CPU, or a CUDA GPU (a "card") holding the vectors (search/card.py).

QUIRE_SEARCH_DEVICE:
  auto  the default: a usable CUDA GPU where this process has one, else the CPU. On a machine without NVIDIA's
        driver it decides without importing torch, so a CPU host's searches start as they did.
  cpu   always the CPU (FAISS over the memory-mapped store, search/index.py).
  cuda  the card; start-up stops with one sentence where no usable GPU is present (SearchConfig.ready), rather
        than a deployment that asked for the card silently searching at the CPU's speed.

"Usable": torch was built with CUDA, sees a device, and can put a tensor on it (a driver older than the CUDA
torch was built for, or a card taken by another container, fails there, not at the first search).
"""

import functools
import logging
import os
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

CHOICES = ("auto", "cpu", "cuda")
# Present wherever NVIDIA's kernel driver is loaded (also inside a container given a GPU).
DRIVER = Path("/proc/driver/nvidia/version")

logger = logging.getLogger(__name__)


class NoUsableGpu(ImproperlyConfigured):
    """QUIRE_SEARCH_DEVICE is cuda and no CUDA GPU can be used: its text says why and what to set."""


def cuda_problem() -> str | None:
    """Why this process cannot use a CUDA GPU, as a clause, or None where it can."""
    if not DRIVER.exists() and not os.environ.get("CUDA_VISIBLE_DEVICES"):
        return "this machine has no NVIDIA driver loaded"
    import torch  # only where a driver is present: a CPU host decides without it

    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU build (install the CUDA build: requirements-gpu.txt)"
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return "torch sees no CUDA device (check the driver, CUDA_VISIBLE_DEVICES, the container's GPU reservation)"
    try:
        torch.zeros(1, device="cuda")
    except RuntimeError as error:  # an old driver, a card in exclusive use elsewhere
        return f"the GPU cannot be used: {str(error).splitlines()[0]}"
    return None


def resolve(choice: str, problem: str | None) -> str:
    """'cpu' or 'cuda' for the setting `choice`, given `problem` (cuda_problem's answer)."""
    if choice not in CHOICES:
        raise ImproperlyConfigured(f"QUIRE_SEARCH_DEVICE is {choice!r}: set it to auto, cpu or cuda.")
    if choice == "cpu":
        return "cpu"
    if problem is None:
        return "cuda"
    if choice == "cuda":
        raise NoUsableGpu(f"QUIRE_SEARCH_DEVICE is cuda but {problem}: set it to auto or cpu, or fix the GPU.")
    return "cpu"


@functools.cache
def search_device() -> str:
    """This process's search device, decided once (a GPU does not come or go under a running process)."""
    choice = settings.QUIRE_SEARCH_DEVICE
    device = resolve(choice, None if choice == "cpu" else cuda_problem())
    if device == "cuda":
        logger.info("searches rank on the GPU (QUIRE_SEARCH_DEVICE=%s)", choice)
    return device


def check_at_start() -> None:
    """Stop start-up where the card was asked for and cannot be used (only then is torch imported here)."""
    if settings.QUIRE_SEARCH_DEVICE == "cuda":
        search_device()
