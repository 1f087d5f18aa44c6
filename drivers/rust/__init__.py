"""The Rust client (the crate `pulsar`, tokio runtime) as a driver: `python -m drivers.rust`."""
