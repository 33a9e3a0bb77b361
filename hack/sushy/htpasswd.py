#!/usr/bin/env python3
"""hack/sushy/sushy.sh --user: the emulator's auth file line for SUSHY_USER with SUSHY_PASSWORD, bcrypt-hashed
(the only hash sushy's auth file accepts; 4 rounds keep each request's check cheap)."""
import os

import bcrypt

u, p = os.environ["SUSHY_USER"], os.environ["SUSHY_PASSWORD"].encode()
print(u + ":" + bcrypt.hashpw(p, bcrypt.gensalt(rounds=4)).decode())
