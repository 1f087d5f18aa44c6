"""Z3 encodings of the model, one-step inductive proofs of the guarantees they support, and the
admissibility of what a crash left behind.

- cursor.py: the broker's cursor as a transition relation; cursor_proofs.py: its proofs
  (`cursor`, `no-redelivery-after-ack`, `no-loss`);
- counter.py: one message's redelivery counter as a transition relation, and its proofs
  (`redelivery-count`, `dead-letter`);
- induction.py: what a proof returns (`Proved` / `Refuted` / `Unknown`) and how its checks conclude;
- catalog.py: every proof with the guarantee it supports, and why the other guarantees have none;
- admissibility.py: whether the acks a crash kept are a possible outcome (asked by model/nondet.py);
- solver.py: the one solver factory (fixed seeds, a resource limit) and its three outcomes.

Everything here is pure (z3 and the standard library); results are never bare booleans
(`Proved` / `Refuted` / `Unknown`, `Admissible` / `Inadmissible` / `Unknown`).
"""
