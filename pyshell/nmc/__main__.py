import sys

from nmc.cli import main

sys.exit(main())
