"""Deployment files; ``local_cluster`` runs their topology on loopback (not part of the wheel)."""
