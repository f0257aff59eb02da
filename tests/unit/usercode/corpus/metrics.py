"""Eval metrics return one value (pytorch-limitations, "Eval metrics")."""

import cerebras.pytorch as cstorch
import torch


class PrecisionRecall(cstorch.metrics.Metric):
    def reset(self):
        self.register_state("tp", torch.tensor(0.0))

    def update(self, predictions, labels):
        self.tp += (predictions == labels).sum()

    def compute(self):
        precision = self.tp / 2
        recall = self.tp / 3
        return precision, recall  # expect: CODE-030


class Summary(cstorch.metrics.Metric):
    def compute(self):
        result = {"mean": self.total / self.count, "count": self.count}
        return result  # expect: CODE-030


class Accuracy(cstorch.metrics.Metric):
    def compute(self):
        return self.correct / self.total  # near miss: one value


class HostRouge:
    """Near miss: not a metric class (a helper returning several values)."""

    def compute(self):
        return 1.0, 2.0
