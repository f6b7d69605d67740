#!/usr/bin/env bash
# Fuzzes the parsers that read what users and networks hand specula
# (harness/tests/fuzz_parsers.rs: target and draft config.json, safetensors
# headers, three sweep specs, SGLang and vLLM request bodies: 8 targets) for
# MINUTES in all (default 10), one target after another, on a release
# build. A panic stops the run naming the input and the SPECULA_FUZZ_SEED
# that replays it; an abort (a huge allocation) fails the test binary.
#
#   bash scripts/fuzz.sh        # 10 minutes
#   bash scripts/fuzz.sh 2      # 2 minutes
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
targets=8
per_target=$(awk "BEGIN { print $minutes * 60 / $targets }")
echo "fuzzing $targets parsers for $minutes min ($per_target s each)"
SPECULA_FUZZ_SECONDS=$per_target cargo test --release -p specula --test fuzz_parsers -- --test-threads 1 --nocapture 2>&1 |
  grep -E "inputs in|panicked|memory allocation|^error|^test |test result"
