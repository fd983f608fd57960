"""Spec texts that many tests start from."""

#: One Gaussian release of μ = 1: the smallest spec, quick to evaluate.
ONE_GAUSSIAN = """privspec: 1
title: One Gaussian release
unit: one record
neighbouring: add-or-remove
mechanism:
  gaussian: {sigma: 1, sensitivity: 1}
"""
