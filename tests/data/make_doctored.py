#!/usr/bin/env python3
"""Writes doctored copies of a measurement file that `clustersim verify` must FAIL, each on one
named check (tests/validate/acceptance_test.cc, tests/tools/verify_cli.sh):
  fewer-sms.json         every GPU reports 114 SMs instead of its SKU's 132       -> identity
  wrong-pci-id.json      PCI device id 0x2330 (H100 SXM) under an "NVIDIA H200" name -> identity
  slow-busbw.json        all_reduce of 1 MiB and more takes 1.3x as long          -> all_reduce_one_node
  socket-transport.json  NCCL connected the GPUs over NET/Socket                   -> nccl_transport
Usage: make_doctored.py SOURCE.json OUT_DIR
"""
import copy
import json
import os
import sys

src, out = sys.argv[1], sys.argv[2]
base = json.load(open(src))
os.makedirs(out, exist_ok=True)


def write(name, doc, what):
    doc["tool_version"] = "%s (doctored: %s)" % (doc.get("tool_version", ""), what)
    with open(os.path.join(out, name), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


d = copy.deepcopy(base)
for g in d["gpus"]:
    g["sm_count"] = 114
write("fewer-sms.json", d, "114 SMs")

d = copy.deepcopy(base)
for g in d["gpus"]:
    g["pci"]["device_id"] = "0x2330"
    g["pci"]["nvml_pci_device_id"] = "0x233010de"
write("wrong-pci-id.json", d, "PCI id 0x2330")

d = copy.deepcopy(base)
for r in d["collectives"]:
    if r["op"] == "all_reduce" and r["size_bytes"] >= 1 << 20:
        for p in ("out_of_place", "in_place"):
            t = r[p]
            if t["time_us"] > 0:
                t["time_us"] *= 1.3
                t["algbw_GBps"] /= 1.3
                t["busbw_GBps"] /= 1.3
write("slow-busbw.json", d, "all_reduce 1.3x slower")

d = copy.deepcopy(base)
for t in d["transports"]:
    t["transport"] = "NET/Socket"
    t["detail"] = "NET/Socket/0"
write("socket-transport.json", d, "NET/Socket")
