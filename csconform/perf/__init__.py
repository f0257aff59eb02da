"""The performance model: hardware presets, cost models, placement, pipeline and streaming models."""
