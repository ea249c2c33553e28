"""Level-triggered controllers: workloads, disruption budgets, garbage collection, autoscaling."""
