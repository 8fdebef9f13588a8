#!/usr/bin/env bash
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90a -std=c++17 -o probe probe.cu || exit 1
for mode in plain cluster1 cluster graph; do
  for rep in 1 2 3; do
    start=$SECONDS
    timeout 60 compute-sanitizer --tool racecheck --racecheck-report all ./probe $mode 8 30 > $OUT/rc-$mode-$rep.log 2>&1
    rc=$?
    echo "$mode rep $rep: rc=$rc $((SECONDS-start)) s; $(grep -E 'RACECHECK SUMMARY|Internal Sanitizer|done' $OUT/rc-$mode-$rep.log | tr '\n' ' ')"
  done
done
