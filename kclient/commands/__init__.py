"""Sub-commands of the ``kclient`` command line, one module each (see :mod:`kclient.cli`)."""
