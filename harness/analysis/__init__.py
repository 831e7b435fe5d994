"""analysis stage (docs/architecture.md)."""
