"""The checks of ``csconform lint``, one module per family of rules in ``specs/user_code.yaml``."""
