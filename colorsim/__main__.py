import sys

from colorsim.cli import main

sys.exit(main())
