"""iperf3's output read: its result (`result.Iperf3Result`), the text parser (`text`, with
`text_summary` for its end-of-test lines), the --json-stream / -J parser (`json`), and which
side's lines measure a pair (`sides`).
"""
