"""Who may read which repository: GitHub permissions, identity links and place policy."""
