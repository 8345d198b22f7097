"""`commhub-agent node`: one supervisor per machine running the agents its config declares."""
