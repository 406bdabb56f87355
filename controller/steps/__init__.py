"""controller.steps."""
