"""controller.sched."""
