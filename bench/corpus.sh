#!/bin/sh
# Recall and precision of the important-line record over the failure corpus
# (tests/corpus/), and the classifier's throughput on its outputs; prints a
# table (see bench/corpus.c). CORPUS_VERBOSE=1 lists, per case, where each
# expected line is, how it classifies, and every kept line.
#
# Usage: bench/corpus.sh [NOISE_LINES [K]]   (defaults 60000 20)
set -e
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" "$BUILD/bench/corpus"
exec "$BUILD/bench/corpus" tests/corpus "${1:-60000}" "${2:-20}"
