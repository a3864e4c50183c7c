"""The console's flow: the keys and what they do (keymap, knobkeys, the main screen's
actions), the calls into the session (control: start, stop, a knob's flip, shutdown), how
events reach the screen (feed, record, journal), leaving, the alternation and bisection
flows and the file dialogs' work. It uses the model and the render wing, never the app."""
