"""A placer: partition p's replicas are consecutive brokers of a list that alternates racks."""


def place(brokers, n_partitions, replication_factor, fixed_start_index=-1, start_partition_id=-1, random=None):
    by_rack = {}
    for b in sorted(brokers, key=lambda b: b.id):
        by_rack.setdefault(b.rack or "", []).append(b.id)
    racks = [by_rack[r] for r in sorted(by_rack)]
    order = [ids[i] for i in range(max(map(len, racks))) for ids in racks if i < len(ids)]
    start = fixed_start_index if fixed_start_index >= 0 else random.next_int(len(order)) if random else 0
    first = max(0, start_partition_id)
    return {first + p: [order[(start + p + r) % len(order)] for r in range(replication_factor)]
            for p in range(n_partitions)}
