"""``python -m mpcc.pm``: the path manager (the same as ``mpcc kernel pm``)."""

import sys

from .netlink import main

sys.exit(main())
