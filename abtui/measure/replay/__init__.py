"""Events without hosts: the replay Controller (`controller`) and the synthetic profile and
event stream it plays when it has no recording (`synthetic`); for the console's tests, benches
and demos.
"""
