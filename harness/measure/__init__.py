"""measure stage (docs/architecture.md)."""
