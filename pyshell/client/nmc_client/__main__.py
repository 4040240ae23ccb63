"""`python -m nmc_client PROOF --jwks JWKS --issuer ISS [--notificatie ID]`: verify a saved
delivery proof (nmc_client.bewijs.main)."""

import sys

from .bewijs import main

sys.exit(main())
