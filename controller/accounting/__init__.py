"""controller.accounting."""
