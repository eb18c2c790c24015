# The two commands of README.md.
.PHONY: demo test bench

# A real wait, end to end: builds the `waitfor` command and waits on a log
# that a background process writes.
demo:
	bash scripts/demo.sh

# Every test in every language, installing what it needs.
test:
	bash scripts/test-all.sh

# Every benchmark beside its peer, measured in one run: writes bench/RESULTS.md.
bench:
	bash scripts/bench.sh
