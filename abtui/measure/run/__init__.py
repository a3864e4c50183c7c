"""One run of a pair: iperf3 (and ping, CPU samplers) started, read and ended. `pair.PairRun`
creates its parts and hands each the run's shared context (`context`): its processes (`procs`),
the interval reader (`reader`) and the samplers (`sampling`, given `cpu`'s host-CPU sampler).
The parts stand on nothing else of measure/: a process's output lines are abtui.remote.lines',
which side of iperf3 measures is abtui.parse.iperf3.sides'.
"""
