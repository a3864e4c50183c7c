"""SSH links to hosts (asyncssh) and the OS dialects that build their commands."""
