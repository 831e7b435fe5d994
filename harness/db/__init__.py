"""db stage (docs/architecture.md)."""
