"""``python -m oncelog``: the same command line as ``oncelog``."""

from oncelog.cli import main

main()
