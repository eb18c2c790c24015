# The two commands of README.md.
.PHONY: demo test bench

# A real wait, end to end: builds the `waitfor` command and waits on a log
# that a background process writes.
demo:
	bash scripts/demo.sh

# Every test in every language, installing what it needs.
test:
	bash scripts/test-all.sh

# The engine's benchmarks (figures in README.md), then the hostile-input
# table (written to its section of bench/RESULTS.md).
bench:
	cargo run --release -p waitfor-bench --bin engine
	cargo run --release -p waitfor-bench --bin hostile
