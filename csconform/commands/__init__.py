"""The ``csconform`` commands, one module per command, named for it.

Each module holds its command's arguments and handler and offers ``add_arguments(parser)``;
:mod:`csconform.cli` assembles them and imports only the module of the command being run.
"""
