#!/usr/bin/env python3
"""Write crow-repeat-65-83-99.json: nine runs modeled on a published write-up (see README.md)."""
import json

TOPO = {"nodes": ["0-11"], "l3_groups": ["0-5", "6-11"]}  # tests/fixtures/hosts/crow-9900x-cx5-x4
IRQS = [98, 99, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119]  # enp1s0f0np0's msi_irqs


def cpu(c, usr=0.0, sys=0.0, irq=0.0, sirq=0.0, nic=0, rx=0, tx=0):
    idle = round(100 - usr - sys - irq - sirq, 1)
    return {"cpu": c, "user": usr, "system": sys, "irq": irq, "softirq": sirq, "steal": 0.0,
            "idle": idle, "nic_irqs": nic, "net_rx": rx, "net_tx": tx}


def background(skip):
    # housekeeping on two CPUs of the other CCD
    return [cpu(c, usr=1.2, sys=0.8, rx=40 + c) for c in (0, 4) if c not in skip]


def end(role, host, rows):
    rows = sorted(rows, key=lambda r: r["cpu"])
    total = {"start": 0.0, "end": 10.0, "cpus": rows,
             "workers": [{"worker": 0, "cpu_requested": 6, "cpus_seen": "6", "streams": [5]}]}
    if role == "sender":
        total["tcp"] = {"busy_us": 10000000, "rwnd_limited_us": 0, "sndbuf_limited_us": 0,
                        "pmtu": 9000}
    return {"role": role, "host": host, "iface": "enp1s0f0np0", "iface_mtu": 9000,
            "iface_speed_mbps": 100000, "nic_irqs": IRQS, "topology": TOPO, "intervals": [],
            "total": total}


def sender(sys, sirq):
    # vulture, the twin host: iperf3 client on CPU 6, its NIC's ACK interrupts on CPU 9
    return end("sender", "vulture", [cpu(6, usr=0.4, sys=sys, sirq=sirq, tx=2100, rx=52000),
                                     cpu(9, sirq=21.0, irq=1.5, nic=61000, rx=64000, tx=900)]
               + background(()))


def run(gbps, sender_end, receiver_rows):
    return {"bits_per_second": gbps * 1e9,
            "observation": {"local": sender_end, "remote": end("receiver", "crow", receiver_rows)}}


def worst(g, v):
    # the flow's queue vector on CPU 6 itself: interrupts and NET_RX share the receiver's core
    return run(g, sender(48.0, 7.0),
               [cpu(6, usr=0.3, sys=51.0 + v, irq=1.6, sirq=46.0 - v, nic=1790000 + int(v * 1000),
                    rx=3980000),
                cpu(8, sirq=0.4, nic=310, rx=900)] + background(()))


def middle(g, v):
    # the flow hashed to mlx5_comp3 (IRQ 111), affine to CPU 3 on the other CCD
    return run(g, sender(63.0, 8.0),
               [cpu(6, usr=0.3, sys=95.7 - v, sirq=2.1 + v, rx=3100),
                cpu(3, sirq=57.0 + v, irq=3.1, nic=2040000, rx=4410000),
                cpu(8, sirq=0.3, nic=260, rx=700)] + background((3,)))


def best(g, v):
    # the flow hashed to mlx5_comp6 (IRQ 114), affine to CPU 8 on the receiver's own CCD
    return run(g, sender(75.0, 9.0),
               [cpu(6, usr=0.3, sys=87.9 + v, sirq=1.0, rx=2600),
                cpu(8, sirq=61.5 - v, irq=3.4, nic=2120000, rx=4790000)] + background(()))


RUNS = [middle(84.9, 0.0), worst(64.6, 0.0), best(98.8, 0.0), middle(83.2, 0.6), worst(65.3, -0.8),
        best(99.1, 0.4), worst(64.1, 0.5), middle(85.6, -0.4), best(98.4, -0.3)]

with open("crow-repeat-65-83-99.json", "w") as f:
    json.dump({"about": "Nine runs of one test between two Ryzen 9 9900X hosts (receiver crow, "
                        "CPU 6); modeled on a published write-up, see README.md",
               "runs": RUNS}, f, indent=1)
    f.write("\n")
