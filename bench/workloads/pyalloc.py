# Allocation-heavy Python workload for the side-by-side benchmark
# (bench/README.md): builds dicts, lists and strings, round-trips them
# through json, and prints a checksum so that the output can be compared
# between runs.  Argument: number of rounds (default 40).
import json
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
total = 0
for r in range(rounds):
    records = []
    for i in range(2000):
        name = "item-%d-%d" % (r, i)
        rec = {
            "id": i,
            "name": name,
            "tags": [name[: (i % 7) + 1] * ((i % 5) + 1) for _ in range(i % 4)],
            "score": (i * 7919 + r) % 1000 / 7.0,
            "blob": "x" * (i % 300),
        }
        records.append(rec)
    text = json.dumps(records, sort_keys=True)
    back = json.loads(text)
    index = {rec["name"]: rec for rec in back}
    joined = ",".join(sorted(index)[:500])
    total += len(text) + len(joined) + sum(len(rec["tags"]) for rec in back)
print("checksum", total)
