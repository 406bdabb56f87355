"""controller.auth."""
