"""The simplest strong baselines beside the three arms (same data and seeds).

- :func:`template_majority`: the most frequent training answer of each proof-seed
  template, given the test problem's template (an oracle of the structure, blind to
  the givens);
- :func:`question_majority`: the most frequent training answer overall (the question
  text names only the target angle, so this is what text alone affords);
- :func:`ir_oracle`: reads the target angle off the gold IR's coordinates (the
  ceiling a perfect IR reader reaches);
- :class:`AnnotationProbe`: a CNN trained only to read the givens' values from the
  image; near-perfect accuracy shows that the experiment does not test OCR.

The blind model (question only) is :func:`icml26.geocode.align.train` with
``AlignConfig(blind=True)``; the code arm on the textbook tier is the same ``train``
on textbook problems.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml26.geocode.dsl import measure_angle
from icml26.geocode.ir import parse_ir
from icml26.geocode.seeds import VALUES
from icml26.shared import Plateau

__all__ = ["AnnotationProbe", "ir_oracle", "question_majority", "template_majority"]


def _acc(pred: Sequence[float], problems: Sequence) -> float:
    return float(
        np.mean([abs(a - p.answer_value) < 1e-6 for a, p in zip(pred, problems, strict=True)])
    )


def template_majority(train: Sequence, test: Sequence) -> float:
    by: dict[str, Counter] = {}
    for p in train:
        by.setdefault(p.template, Counter())[p.answer_value] += 1
    overall = Counter(p.answer_value for p in train).most_common(1)[0][0]
    pred = [by[p.template].most_common(1)[0][0] if p.template in by else overall for p in test]
    return _acc(pred, test)


def question_majority(train: Sequence, test: Sequence) -> float:
    overall = Counter(p.answer_value for p in train).most_common(1)[0][0]
    return _acc([overall] * len(test), test)


def ir_oracle(test: Sequence) -> float:
    pred = []
    for p in test:
        pts = parse_ir(p.ir).points
        pred.append(round(measure_angle(pts, p.target) * 2) / 2)
    return _acc(pred, test)


class AnnotationProbe(nn.Module):
    """A CNN with one head per given: which of :data:`VALUES` it states."""

    def __init__(self, channels: tuple[int, ...] = (32, 48, 64, 64)):
        super().__init__()
        layers, cin = [], 1
        for cout in channels:
            layers += [nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.GELU()]
            cin = cout
        self.cnn = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.head = nn.Linear(4 * cin, 2 * len(VALUES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.cnn(x)).view(-1, 2, len(VALUES))

    @staticmethod
    def labels(problems: Sequence) -> torch.Tensor:
        return torch.tensor([[VALUES.index(d) for _, d in p.givens] for p in problems])

    @classmethod
    def fit_and_score(
        cls,
        train: Sequence,
        test: Sequence,
        *,
        seed: int,
        rule: Plateau,
        batch_size: int = 32,
        per_item: bool = False,
    ) -> tuple[float, dict]:
        """Train to a plateau of the training loss; accuracy of reading both givens.

        ``per_item``: the summary also holds ``"read_items"``, one bool per test image
        (both givens read right).
        """
        from icml26.geocode.align import _images

        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        model = cls()
        opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
        x, y = _images(train), cls.labels(train)
        while not rule.stopped:
            idx = torch.randint(len(train), (batch_size,), generator=gen)
            loss = F.cross_entropy(model(x[idx]).reshape(-1, len(VALUES)), y[idx].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            rule.update(loss.item())
        with torch.no_grad():
            pred = model(_images(test)).argmax(-1)
        items = (pred == cls.labels(test)).all(dim=1)
        summary = rule.summary()
        if per_item:
            summary["read_items"] = [bool(v) for v in items.tolist()]
        return float(items.float().mean().item()), summary
