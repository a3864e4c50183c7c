"""A lab's VM hosts: a guest's command line, script and NIC (`guest`), the VM pairs of a lab
(`pairs`) and booting another build on them (`boot`).
"""
