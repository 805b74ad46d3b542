"""Local stand-ins for external services that tests drive through their real clients."""
