"""The ``roce-wizard`` command line: the entry point (``main``) and one module per subcommand.

Kept free of imports: ``roce-wizard --help`` must not pay for anything it does not print (bench/startup.py).
"""
