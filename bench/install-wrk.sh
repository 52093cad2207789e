#!/bin/sh
# Installs the benchmark's load generator, wrk, from Debian's packages.
# Run by bench/run.ts when `wrk` is not on PATH; safe to run by hand.
set -eu

if command -v wrk >/dev/null 2>&1; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo -n"
  else
    echo "install-wrk: need root (or sudo) to run apt-get install wrk" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing or stale on a fresh machine: update and retry once.
if ! $SUDO apt-get install -y -q wrk; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q wrk
fi

command -v wrk >/dev/null 2>&1
