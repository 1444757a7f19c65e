"""``python -m negotiation.cli`` runs ``nego``."""

from negotiation.cli import main

main()
