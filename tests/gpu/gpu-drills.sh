#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The crash drills of test_e2e (either side killed after each handshake
# step and in mid-stream, SIGKILL at random frames, a producer restart, a
# stopped consumer dropped for its lease or by the heartbeat),
# run again with every frame in GPU memory: the producer takes CUDA memory
# (cudaupload) and the consumers force transport=cuda, in host and in
# semaphore synchronisation.  Every consumer that reaches the end must have
# streamed through cuda-vmm; a GPU consumer killed while it holds slots has
# them quarantined by the producer, which replaces its ring.
#
# usage: gpu-drills.sh TEST_E2E
set -u
e2e=$1
frames=0
peer=${GPUSHARE_TEST_PEER:-}

. "$(dirname "$0")/gpu-lib.sh"

export GST_CHECKS=test_consumer_killed,test_stopped_consumer,test_producer_killed,test_producer_restart,test_crash_drill_producer,test_crash_drill_consumer,test_random_kills
export GPUSHARE_E2E_PRODUCER_ARGS="--gpu-input"
export GPUSHARE_E2E_WANT_TRANSPORT=cuda-vmm
for sync in host semaphore; do
  export GPUSHARE_E2E_CONSUMER_ARGS="--transport cuda --sync $sync"
  # the whole output, the children's warnings included, stays next to the
  # test for a failure to be read
  log=gpu-drills-$sync.log
  if "$e2e" > "$log" 2>&1; then
    pass "crash drills over GPU memory, $sync: $(grep -m1 'Checks:' "$log")"
  else
    fail "crash drills over GPU memory, $sync (whole output in $log):"
    grep -E ':[EF]:|Checks:' "$log" | head -20
  fi
done
finish
