"""`python -m wizard` is the same as `roce-wizard`."""

from wizard.cli import main

raise SystemExit(main())
