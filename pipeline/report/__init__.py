"""What people read: the run's HTML report, the morning page, its charts, and
the events (alerts) a run's metrics call for."""
