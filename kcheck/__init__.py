"""kcheck's front door: the command line and the reports that wire the other parts together."""
