"""`python kcheck/sweep.py ...` (under spark-submit, say) is `kcheck sweep ...`: a script, imported by nothing."""

import os
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # run as a script: no sibling shadows
    from kcheck.cli import main

    sys.exit(main(["sweep", *sys.argv[1:]]))
