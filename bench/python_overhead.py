"""Python call overheads, side by side in one run (until kiln.benchmark lands).

Run: .venv/bin/python bench/python_overhead.py
Prints median (min..max) ns per call over 7 repeats of 20,000 calls each.
"""
import statistics
import timeit

import kiln as tf

a, b = tf.constant(1.0), tf.constant(2.0)


@tf.function
def add(x, y):
    return x + y


@tf.function
def add_default(x, y, z=0.0):
    return x + y + z


v = tf.Variable(2.0)

add(a, b)  # trace once
add_default(a, b)
add(a, v)
add(a, 2.0)

CASES = {
    "eager a + b": lambda: a + b,
    "eager raw AddV2": lambda: tf._kiln.raw.AddV2(a, b),
    "function add(a, b), cache hit": lambda: add(a, b),
    "function add(x=a, y=b), keywords": lambda: add(x=a, y=b),
    "function add_default(a, b), default": lambda: add_default(a, b),
    "function add(a, variable)": lambda: add(a, v),
    "function add(a, 2.0), Python float": lambda: add(a, 2.0),
}


def main():
    results = {}
    for name, fn in CASES.items():
        times = [timeit.timeit(fn, number=20000) / 20000 * 1e9 for _ in range(7)]
        results[name] = (statistics.median(times), min(times), max(times))
        print(f"{name:40s} {results[name][0]:8.0f} ns  ({results[name][1]:.0f}..{results[name][2]:.0f})")
    ratio = results["function add(a, b), cache hit"][0] / results["eager a + b"][0]
    print(f"function call / eager op: {ratio:.2f}x")


if __name__ == "__main__":
    main()
