from kcheck.entry import run

run()
