"""Readers of the text kcheck takes: Kafka's own tools' output (`kafka-topics --describe`, reassignment JSON,
`kafka-consumer-groups --describe`, `kafka-dump-log`, `kafka-log-dirs`) and kcheck's own input files, read into
`model` values; every bad input is an `InputError` naming its place."""
