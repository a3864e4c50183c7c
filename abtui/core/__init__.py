"""What every layer shares: the data model, errors, configurations, the controller protocol."""
