"""The local lab: network-namespace and VM hosts on this machine, their profile and mapping."""
