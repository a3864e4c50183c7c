"""SSH links to hosts (asyncssh), and in `os/` the one driver per OS that builds their commands."""
