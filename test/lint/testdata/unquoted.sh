#!/usr/bin/env bash
# A fixture for test/lint: an unquoted expansion (shellcheck SC2086).
dir=$1
ls $dir
