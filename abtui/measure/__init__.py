"""Driving pairs: the engine, runs, phases, plans, iperf3 command lines, replay, headless runs."""
