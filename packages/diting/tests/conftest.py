import os

import pytest
import torch

for _name in ("JAX", "TENSORFLOW", "CUPY"):  # POT imports every backend it finds otherwise
    os.environ.setdefault(f"POT_BACKEND_DISABLE_{_name}", "1")


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
