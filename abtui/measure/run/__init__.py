"""One run of a pair: iperf3 (and ping, CPU samplers) started, read and ended. `pair.PairRun`
is composed of a shared context (`context`) and parts it creates: its processes (`procs`),
the interval reader (`reader`), the samplers (`sampling`, `cpu`) and the helpers they share
(`lines`: a process's output lines; `sides`: which side of iperf3 measures what).
"""
