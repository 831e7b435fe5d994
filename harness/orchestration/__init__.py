"""orchestration stage (docs/architecture.md, "Layers"): a run planned and executed case by case in a
GPU worker process (or on the simulated GPU), one run per GPU of a node; families looked up in the
registry and handed down to the stages below."""
