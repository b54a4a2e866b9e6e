"""`python -m benchharness` is the `bench` command."""

from benchharness.cli.main import main

raise SystemExit(main())
