"""`python -m benchharness` is the `bench` command."""

from benchharness.cli import main

raise SystemExit(main())
