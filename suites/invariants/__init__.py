"""Z3-checked invariants: one-step inductive proofs of the cursor's and the redelivery counter's
guarantees (each with a wrong encoding it must refute), the fidelity of the Z3 encoding to the
Python model, and the admissibility of what a broker crash left behind.
"""
