"""Z3 encodings of the model: the cursor's transition relation, one-step inductive proofs of its
guarantees, and the admissibility of what a crash left behind.

Everything here is pure (z3 and the standard library): one solver factory with fixed seeds and a
resource limit (`solver`), results that are never bare booleans (`Proved` / `Refuted` / `Unknown`,
`Admissible` / `Inadmissible` / `Unknown`).
"""
