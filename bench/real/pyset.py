#!/usr/bin/env python3
"""pyset.py - a few pyperformance-like programs, written here, for make realbench.

Each runs a fixed amount of work, prints a check of what it computed (the same in every
run) and its rate (work per second); the last line is the geometric mean of the rates,
whose ratio between two runs is the geometric mean of the programs' ratios.
"""
import json
import math
import random
import re
import time


def bigdict():
    # a large dict and list read at random: ~2M entries, a few hundred MiB of heap
    rnd = random.Random(5)
    n = 2_000_000
    d = {"k%d" % i: i for i in range(n)}
    keys = ["k%d" % rnd.randrange(n) for _ in range(1_000_000)]
    t0 = time.perf_counter()
    s = 0
    for k in keys:
        s += d[k]
    return s, len(keys) / (time.perf_counter() - t0)


class Node:
    __slots__ = ("val", "kids")

    def __init__(self, val):
        self.val = val
        self.kids = []


def objects():
    # builds and drops trees of small objects (allocation and GC churn)
    t0 = time.perf_counter()
    total = 0
    for r in range(6):
        nodes = [Node(i) for i in range(300_000)]
        for i in range(1, len(nodes)):
            nodes[(i - 1) // 4].kids.append(nodes[i])
        stack = [nodes[0]]
        while stack:
            x = stack.pop()
            total += x.val & 7
            stack.extend(x.kids)
    return total, 6 * 300_000 / (time.perf_counter() - t0)


def nbody():
    bodies = [[random.Random(i).uniform(-5, 5) for _ in range(3)] + [0.0, 0.0, 0.0, 1.0 + i]
              for i in range(5)]
    steps = 40_000
    t0 = time.perf_counter()
    for _ in range(steps):
        for i in range(5):
            bi = bodies[i]
            for j in range(i + 1, 5):
                bj = bodies[j]
                dx, dy, dz = bi[0] - bj[0], bi[1] - bj[1], bi[2] - bj[2]
                d2 = dx * dx + dy * dy + dz * dz + 0.01
                mag = 0.001 / (d2 * math.sqrt(d2))
                bi[3] -= dx * bj[6] * mag
                bi[4] -= dy * bj[6] * mag
                bi[5] -= dz * bj[6] * mag
                bj[3] += dx * bi[6] * mag
                bj[4] += dy * bi[6] * mag
                bj[5] += dz * bi[6] * mag
        for b in bodies:
            b[0] += 0.001 * b[3]
            b[1] += 0.001 * b[4]
            b[2] += 0.001 * b[5]
    return "%.6f" % sum(b[0] for b in bodies), steps / (time.perf_counter() - t0)


def jsonrt():
    rnd = random.Random(7)
    doc = [{"id": i, "name": "n%d" % rnd.randrange(10**6), "tags": [rnd.randrange(100) for _ in range(8)],
            "w": rnd.random()} for i in range(50_000)]
    t0 = time.perf_counter()
    n = 0
    for _ in range(4):
        s = json.dumps(doc)
        n += len(json.loads(s))
    return len(s), 4 * len(doc) / (time.perf_counter() - t0)


def regex():
    rnd = random.Random(8)
    text = " ".join("user%d@host%d.example" % (rnd.randrange(10**5), rnd.randrange(100)) if rnd.random() < 0.1
                    else "w%d" % rnd.randrange(1000) for _ in range(400_000))
    pat = re.compile(r"(\w+)@(host\d+)\.example")
    t0 = time.perf_counter()
    found = 0
    for _ in range(3):
        found += len(pat.findall(text))
    return found, 3 * len(text) / (time.perf_counter() - t0)


def sort():
    rnd = random.Random(9)
    xs = [rnd.random() for _ in range(1_000_000)]
    t0 = time.perf_counter()
    ys = sorted(xs)
    zs = sorted(map(str, xs[:300_000]))
    return "%.6f %s" % (ys[500_000], zs[0]), (len(xs) + 300_000) / (time.perf_counter() - t0)


def main():
    rates = []
    for f in (bigdict, objects, nbody, jsonrt, regex, sort):
        check, rate = f()
        name = f.__name__.replace("jsonrt", "json")
        print("check: %s %s" % (name, check))
        print("%s %.1f per s" % (name, rate))
        rates.append(rate)
    print("python: %.3f (geometric mean of the rates)" % math.exp(sum(map(math.log, rates)) / len(rates)))


if __name__ == "__main__":
    main()
