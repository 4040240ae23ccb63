import sys

from nmc.cli import main

if __name__ == "__main__":  # `python -m nmc`; importing the module runs nothing
    sys.exit(main())
