# Call 1b (right after call 1 on the same warm H100, the same binaries): call 1's `gpu agree` on
# the 16-head latent fixture had failed before running (its 3 layers have no default aux
# layers); mla16.json now has 4. The fixture with the cut at 64 keys (decode and verify rows
# on tensor cores) and off.
#
#   run (as one command line): CALL_BUDGET_S=60; . scripts/gpu_call.sh; ...; cd $OUT && tar czf r.tgz r && rm -rf r
CALL_BUDGET_S=60
. scripts/gpu_call.sh
M16=results/h200/mla-long-2026-12-07/mla16.json
SPECULA_MLA_LONG=64 agree $M16 mla16-from64
SPECULA_MLA_LONG=off agree $M16 mla16-off
