"""The numerical layer: single releases' privacy-loss distributions, their composition,
the trade-off curve and its Gaussian-DP numbers.  It knows nothing of reports."""
