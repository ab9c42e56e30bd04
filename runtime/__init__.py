"""What every part of a kcheck run shares with the process: one exit-status policy (`exit_codes`) and Ctrl-C /
SIGTERM handling (`interrupts`). Imports no other part."""
