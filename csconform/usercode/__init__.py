"""The user's training code, checked against the spec: statically (``lint``) and on CPU (``lint --run``)."""
