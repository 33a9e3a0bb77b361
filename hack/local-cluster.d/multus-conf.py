#!/usr/bin/env python3
"""hack/local-cluster: Multus's configuration, the pod network's conflist inline as its first delegate.
Usage: multus-conf.py CONFLIST STATE_DIR > 00-multus.conf
"""
import json
import sys
conflist, d = json.load(open(sys.argv[1])), sys.argv[2]
print(json.dumps({
    "cniVersion": conflist["cniVersion"], "name": "multus-cni-network", "type": "multus",
    "kubeconfig": d + "/etc/cni/net.d/multus.d/multus.kubeconfig",
    "cniDir": d + "/cni/multus", "binDir": d + "/cni/bin", "logToStderr": True,
    "delegates": [conflist]}, indent=2))
