#!/bin/sh
# Harness self-test: hangs (with a child) until the harness kills it.
# guest-timeout: 3
echo "ok - started"
sleep 1000 &
sleep 1000
