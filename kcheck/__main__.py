import sys

from kcheck.cli import main

sys.exit(main())
