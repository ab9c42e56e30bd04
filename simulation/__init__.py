"""The storage simulator: one topic partition's log run step by step on the storage reference with a clock."""
