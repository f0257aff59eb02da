"""The ``csconform`` commands, one module per command, named for it.

Each module holds its command's parser and handler and offers ``register(subparsers)``;
:mod:`csconform.cli` assembles them and imports only the module of the command being run.
"""
