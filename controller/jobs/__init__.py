"""controller.jobs."""
