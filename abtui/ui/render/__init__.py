"""The console's drawing: the widgets (pair panes, knob bar, phase table, event log,
verdict panel), the layout that fits them to the terminal, the dialogs (screens), the
panes' repaints, and the one module that touches Textual's privates. It reads the model;
it never calls the controller."""
