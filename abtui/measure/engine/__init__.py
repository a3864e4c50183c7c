"""The engine: its front (`front.Engine`, what the console and headless runs drive) and the parts
it owns and hands each other: the hosts and their links (`hosts`), knob changes (`knobs`), the
runs' scheduling (`runs`) and the checks of what the hosts run (`verify`).
"""
