"""iperf3's output read: its result (`result.Iperf3Result`), the text parser (`text`, with
`text_summary` for its end-of-test lines) and the --json-stream / -J parser (`json`).
"""
