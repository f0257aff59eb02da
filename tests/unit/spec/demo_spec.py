"""A tiny, valid spec area used by the loader tests."""

VALID_AREA = """\
area: demo
title: A demonstration area
rules:
  - id: DEMO-001
    title: Mixed precision only
    statement: Training on the CS system uses mixed precision only.
    source: "pytorch-limitations#Floating Point Precision"
    kind: limitation
    level: documented
    scope: {target: cs, mode: any}
    error: {type: PrecisionError}
    status: checked
  - id: DEMO-002
    title: Scheduler as a function of the step
    statement: The learning rate is a function of the global step.
    source:
      - "pytorch-limitations#Weight Streaming mode"
      - "public-facts#LR schedules"
    kind: behaviour
    level: public
    scope: {target: both, mode: weight_streaming}
    status: pending
    reason: not yet checkable
"""
