"""controller.nodes."""
