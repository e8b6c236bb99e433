#!/bin/sh
# Harness self-test: one failing sub-check and a non-zero exit status.
echo "ok - first check passes"
echo "not ok - second check fails # on purpose"
exit 3
