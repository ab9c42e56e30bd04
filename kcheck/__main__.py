import sys

try:  # Ctrl-C while the modules load: one line, as during a command
    from kcheck.cli import main
except KeyboardInterrupt:
    print("kcheck: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
