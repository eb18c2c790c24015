# The two commands of README.md, and the release artefacts.
.PHONY: demo test bench dist dist-test

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

# Every artefact a user installs (wheels, sdist, npm packages) into
# target/packages/, with their sizes.
dist:
	bash scripts/dist.sh

# Builds them, then installs each that runs here with no Rust toolchain on
# PATH and runs a wait with it; checks tags, architectures and stripping
# (the last area of `make test`).
dist-test:
	bash scripts/test-dist.sh
