"""Small tensors run fastest on one intra-op thread (and do not fight other jobs for cores)."""

import torch

torch.set_num_threads(1)
