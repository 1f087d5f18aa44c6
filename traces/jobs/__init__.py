"""The trace jobs: each reads, calls transforms from traces.transforms, writes."""
