#!/usr/bin/env bash
# A fixture for test/lint: the same script, clean.
dir=$1
ls "$dir"
