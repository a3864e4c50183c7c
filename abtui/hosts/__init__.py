"""What abtui changes on hosts and sets back: knobs, tunnels, the undo journal."""
