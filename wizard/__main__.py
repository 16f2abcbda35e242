"""`python -m wizard` is the same as `roce-wizard`."""

from wizard.cli.main import main

raise SystemExit(main())
