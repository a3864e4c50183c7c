"""One driver per OS a host runs, picked once per host (`pick.py`, from `uname -s`): its
dialect (`dialect.py`: the base) builds every command abtui runs on it for knobs, builds and
tunnels, each part in its OS's package (`linux/`, `freebsd/`) on the shared vocabulary of
`builds.py` and `tunnels.py`. Nothing here does I/O or imports abtui.hosts."""
