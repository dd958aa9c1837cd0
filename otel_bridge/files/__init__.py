"""Files as input from another user: opened without following links, regular files only,
size-capped (`_safe_open`), and the places an output may not go: inside a watched
session-state root or onto a log (`_output_places`)."""
