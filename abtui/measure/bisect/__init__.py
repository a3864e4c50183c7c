"""`abtui bisect`: the search over candidates (`search`), its steps run on the engine (`run`),
the same in the console (`live`) and the board the console's bisect panel folds (`board`).
"""
